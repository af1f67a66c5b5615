// 7 rows over 4 devices (2, 2, 2, 1): an add on the shards, then the padded all-gather.
func.func @main(%x: tensor<7x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>, %y: tensor<7x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>) -> tensor<7x6xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>> {
  %s = fusion.add %x, %y : tensor<7x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>, tensor<7x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<7x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>
  %g = fusion.set %s : tensor<7x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<7x6xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %g : tensor<7x6xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
}
