// A linear contracting a sharded K axis: X is all-gathered first.
func.func @main(%x: tensor<4x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, %w: tensor<6x2xf32>) -> tensor<4x6xf32, #fusion.parallel<[stream(2), serial], mesh = [0, 1]>> {
  %y = fusion.linear %x, %w : tensor<4x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, tensor<6x2xf32> -> tensor<4x6xf32, #fusion.parallel<[stream(2), serial], mesh = [0, 1]>>
  func.return %y : tensor<4x6xf32, #fusion.parallel<[stream(2), serial], mesh = [0, 1]>>
}
