// Replicated on [0] -> replicated on [1] (disjoint meshes): a broadcast over [0, 1] from device 0.
func.func @main(%x: tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0]>>) -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [1]>> {
  %y = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0]>> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
}
