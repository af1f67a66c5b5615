// stream(2) chunks of two row blocks: the gathered axis of each chunk is not outermost.
func.func @main(%a: tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<16x32xf32>) -> tensor<4x2x8x32xf32, #fusion.parallel<[stream(2), serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<16x32xf32> -> tensor<4x2x8x32xf32, #fusion.parallel<[stream(2), serial, serial, serial]>>
  func.return %c : tensor<4x2x8x32xf32, #fusion.parallel<[stream(2), serial, serial, serial]>>
}
