// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.num_streams: the runtime's number of streams, an index.

// CHECK-LABEL: func.func @num_streams(
func.func @num_streams() -> index {
  // CHECK-NEXT: %n = hir.num_streams
  %n = hir.num_streams
  // CHECK-NEXT: func.return %n : index
  func.return %n : index
}
