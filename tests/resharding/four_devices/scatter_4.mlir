// Replicated on 4 devices -> sharded on axis 1: each device's slice, taken locally.
func.func @main(%x: tensor<3x4x5xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1, 2, 3]>>) -> tensor<3x4x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2, 3]>> {
  %y = fusion.set %x : tensor<3x4x5xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<3x4x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<3x4x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2, 3]>>
}
