// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.synchronize: the current stream waits for another stream (fork and join of section 4).

// CHECK-LABEL: func.func @synchronize(
func.func @synchronize(%k: index) {
  // CHECK-NEXT: %main = hir.get_current_stream
  %main = hir.get_current_stream
  // CHECK-NEXT: %s = hir.stream %k
  %s = hir.stream %k
  // CHECK-NEXT: hir.set_current_stream %s
  hir.set_current_stream %s
  // CHECK-NEXT: hir.synchronize %main
  hir.synchronize %main
  // CHECK-NEXT: hir.set_current_stream %main
  hir.set_current_stream %main
  // CHECK-NEXT: hir.synchronize %s
  hir.synchronize %s
  // CHECK-NEXT: func.return
  func.return
}
