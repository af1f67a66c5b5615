// The same gather in one set (sharded on [0, 1] -> replicated on [1]): an all-gather on [0, 1].
func.func @main(%x: tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>> {
  %y = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
}
