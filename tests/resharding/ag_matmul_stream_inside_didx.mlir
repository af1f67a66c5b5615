// AG+GEMM with the stream axis inside the didx axis: chunk i of the gathered A is a strided view,
// so each chunk is gathered into a contiguous temporary and copied into it.
func.func @main(%a: tensor<2x4x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>, %b: tensor<16x32xf32>) -> tensor<2x4x8x32xf32, #fusion.parallel<[serial, stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x4x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>, tensor<16x32xf32> -> tensor<2x4x8x32xf32, #fusion.parallel<[serial, stream, serial, serial]>>
  func.return %c : tensor<2x4x8x32xf32, #fusion.parallel<[serial, stream, serial, serial]>>
}
