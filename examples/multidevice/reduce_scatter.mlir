// A plain reduce-scatter: sum over the sharded axis 0, result sharded over axis 1's devices.
func.func @main(%x: tensor<2x2x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<2x2x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}
