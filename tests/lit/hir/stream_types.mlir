// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// The !hir.stream and !hir.work types as function arguments and results.

// CHECK-LABEL: func.func @types(
func.func @types(%s: !hir.stream, %w: !hir.work) -> (!hir.stream, !hir.work) {
  // CHECK-NEXT: func.return %s, %w : !hir.stream, !hir.work
  func.return %s, %w : !hir.stream, !hir.work
}
