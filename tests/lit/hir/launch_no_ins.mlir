// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.launch with no ins. No fusion op takes zero operands, so such a launch has no outs either
// (an empty segment), but the syntax and the verifier accept it.

// CHECK-LABEL: func.func @launch_empty(
func.func @launch_empty() {
  // CHECK-NEXT: hir.launch ins() outs() {
  hir.launch ins() outs() {
    // CHECK-NEXT: hir.yield
    hir.yield
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @launch_empty_attributes(
func.func @launch_empty_attributes() {
  // CHECK-NEXT: hir.launch ins() outs() attributes {name = "noop"} {
  hir.launch ins() outs() attributes {name = "noop"} {
    // CHECK-NEXT: hir.yield
    hir.yield
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}
