// An all-gather over a mesh of one device: sharded on axis 0 (one index) -> replicated.
func.func @main(%x: tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>)
    -> tensor<1x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0]>> {
  %y = fusion.set %x : tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>> -> tensor<1x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0]>>
  func.return %y : tensor<1x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0]>>
}
