// Replicated on [2] -> sharded on [0, 1, 2, 3]: a broadcast from device 2, then each device's slice.
func.func @main(%x: tensor<4x3xf32, #fusion.parallel<[serial, serial], mesh = [2]>>) -> tensor<4x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> {
  %y = fusion.set %x : tensor<4x3xf32, #fusion.parallel<[serial, serial], mesh = [2]>> -> tensor<4x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<4x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>
}
