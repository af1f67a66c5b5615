// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.set_current_stream: switch the current stream, and back.

// CHECK-LABEL: func.func @set_current_stream(
func.func @set_current_stream(%k: index) {
  // CHECK-NEXT: %main = hir.get_current_stream
  %main = hir.get_current_stream
  // CHECK-NEXT: %s = hir.stream %k
  %s = hir.stream %k
  // CHECK-NEXT: hir.set_current_stream %s
  hir.set_current_stream %s
  // CHECK-NEXT: hir.set_current_stream %main
  hir.set_current_stream %main
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @set_current_stream_arg(
func.func @set_current_stream_arg(%s: !hir.stream) {
  // CHECK-NEXT: hir.set_current_stream %s {tag}
  hir.set_current_stream %s {tag}
  // CHECK-NEXT: func.return
  func.return
}
