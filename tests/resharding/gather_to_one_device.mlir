// A gather to device 0 in the two steps the one-change rule asks for: an all-gather on the mesh,
// then replicated on [0, 1] -> [0], which moves nothing (a local copy on the devices of [0]).
func.func @main(%x: tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>> {
  %g = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %y = fusion.set %g : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>>
}
