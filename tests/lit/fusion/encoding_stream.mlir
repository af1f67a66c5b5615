// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// `stream`: one host-loop iteration per index; any axis may be the stream axis.

// CHECK-LABEL: func.func @stream_outer(
func.func @stream_outer(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @stream_inner(
func.func @stream_inner(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  %r = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}

// CHECK-LABEL: func.func @stream_to_stream(
func.func @stream_to_stream(%x: tensor<4x8xf32, #fusion.parallel<[stream, serial]>>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  %r = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}
