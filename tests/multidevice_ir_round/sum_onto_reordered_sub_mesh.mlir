// A sum over the sub-mesh [2, 0] into a value replicated on [0, 2].
func.func @main(%x: tensor<2x5xf32, #fusion.parallel<[didx, serial], mesh = [2, 0]>>) -> tensor<5xf32, #fusion.parallel<[serial], mesh = [0, 2]>> {
  %r = fusion.sum %x dims = [0] : tensor<2x5xf32, #fusion.parallel<[didx, serial], mesh = [2, 0]>> -> tensor<5xf32, #fusion.parallel<[serial], mesh = [0, 2]>>
  func.return %r : tensor<5xf32, #fusion.parallel<[serial], mesh = [0, 2]>>
}
