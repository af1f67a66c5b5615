// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.get_current_stream: the stream in use, a !hir.stream value.

// CHECK-LABEL: func.func @get_current_stream(
func.func @get_current_stream() -> !hir.stream {
  // CHECK-NEXT: %main = hir.get_current_stream
  %main = hir.get_current_stream
  // CHECK-NEXT: func.return %main : !hir.stream
  func.return %main : !hir.stream
}

// CHECK-LABEL: func.func @get_current_stream_attributes(
func.func @get_current_stream_attributes() -> !hir.stream {
  // CHECK-NEXT: %main = hir.get_current_stream {tag}
  %main = hir.get_current_stream {tag}
  // CHECK-NEXT: func.return %main : !hir.stream
  func.return %main : !hir.stream
}
