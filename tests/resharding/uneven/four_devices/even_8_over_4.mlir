// 8 rows over 4 devices: even, 2 each (static local extent 2, no padding). A linear whose N is
// not contracted, the all-gather, and a sum over the didx axis onto 8 rows (a reduce-scatter).
func.func @main(%x: tensor<8x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>, %w: tensor<4x16xf32>, %p: tensor<4x8x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>) -> (tensor<8x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>, tensor<8x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>) {
  %y = fusion.linear %x, %w : tensor<8x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>, tensor<4x16xf32> -> tensor<8x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>
  %g = fusion.set %y : tensor<8x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<8x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
  %r = fusion.sum %p dims = [0] : tensor<4x8x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<8x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>
  func.return %g, %r : tensor<8x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>, tensor<8x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>
}
