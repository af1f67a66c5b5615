// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// `stream(N)`: the axis outer-split into N chunks (N divides the extent, or `?`).

// CHECK-LABEL: func.func @stream_chunks(
func.func @stream_chunks(%x: tensor<8x4xf32>) -> tensor<8x4xf32, #fusion.parallel<[stream(4), serial]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<8x4xf32> -> tensor<8x4xf32, #fusion.parallel<[stream(4), serial]>>
  %r = fusion.set %x : tensor<8x4xf32> -> tensor<8x4xf32, #fusion.parallel<[stream(4), serial]>>
  // CHECK-NEXT: func.return %r : tensor<8x4xf32, #fusion.parallel<[stream(4), serial]>>
  func.return %r : tensor<8x4xf32, #fusion.parallel<[stream(4), serial]>>
}

// CHECK-LABEL: func.func @stream_one_chunk(
func.func @stream_one_chunk(%x: tensor<8x4xf32>) -> tensor<8x4xf32, #fusion.parallel<[serial, stream(1)]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<8x4xf32> -> tensor<8x4xf32, #fusion.parallel<[serial, stream(1)]>>
  %r = fusion.set %x : tensor<8x4xf32> -> tensor<8x4xf32, #fusion.parallel<[serial, stream(1)]>>
  // CHECK-NEXT: func.return %r : tensor<8x4xf32, #fusion.parallel<[serial, stream(1)]>>
  func.return %r : tensor<8x4xf32, #fusion.parallel<[serial, stream(1)]>>
}

// CHECK-LABEL: func.func @stream_chunks_dynamic(
func.func @stream_chunks_dynamic(%x: tensor<?x?xf32>) -> tensor<?x?xf32, #fusion.parallel<[stream(4), serial]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<?x?xf32> -> tensor<?x?xf32, #fusion.parallel<[stream(4), serial]>>
  %r = fusion.set %x : tensor<?x?xf32> -> tensor<?x?xf32, #fusion.parallel<[stream(4), serial]>>
  // CHECK-NEXT: func.return %r : tensor<?x?xf32, #fusion.parallel<[stream(4), serial]>>
  func.return %r : tensor<?x?xf32, #fusion.parallel<[stream(4), serial]>>
}
