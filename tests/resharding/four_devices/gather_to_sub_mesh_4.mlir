// Sharded on [1, 3] -> replicated on [0, 1, 2, 3]: an all-gather on [1, 3], then a broadcast from device 1.
func.func @main(%x: tensor<2x6xf32, #fusion.parallel<[didx, serial], mesh = [1, 3]>>) -> tensor<2x6xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>> {
  %y = fusion.set %x : tensor<2x6xf32, #fusion.parallel<[didx, serial], mesh = [1, 3]>> -> tensor<2x6xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<2x6xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
}
