// A plain all-gather: sharded on axis 0 over 2 devices -> replicated.
func.func @main(%x: tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
}
