// AG+GEMM over 5 row blocks in stream(2) chunks: chunks of 3 and 2 row blocks (hir.alias_chunk
// with a dynamic extent), each gathered through axis-first temporaries sized with memref.dim.
func.func @main(%a: tensor<5x2x4x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<8x6xf32>) -> tensor<5x2x4x6xf32, #fusion.parallel<[stream(2), serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<5x2x4x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<8x6xf32> -> tensor<5x2x4x6xf32, #fusion.parallel<[stream(2), serial, serial, serial]>>
  func.return %c : tensor<5x2x4x6xf32, #fusion.parallel<[stream(2), serial, serial, serial]>>
}
