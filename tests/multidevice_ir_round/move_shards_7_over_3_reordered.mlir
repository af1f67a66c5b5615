// 7 rows over [2, 0, 1] (3, 3, 1) moved to [0, 1, 2]: each pair sends equal shards, device 2 to 0, 0 to 1, 1 to 2.
func.func @main(%x: tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 1]>>) -> tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2]>> {
  %r = fusion.neg %x : tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 1]>> -> tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 1]>>
  %y = fusion.set %r : tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 1]>> -> tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2]>>
  func.return %y : tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2]>>
}
