// AG+GEMM in a stream loop: per chunk i, the padded all-gather of A[i] (5 rows over 2
// devices), then the matmul of the gathered chunk.
func.func @main(%a: tensor<3x5x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, %b: tensor<16x8xf32>) -> tensor<3x5x8xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>> {
  %c = fusion.matmul %a, %b : tensor<3x5x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, tensor<16x8xf32> -> tensor<3x5x8xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<3x5x8xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
}
