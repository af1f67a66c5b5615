// An all-gather along the last axis over 4 devices.
func.func @main(%x: tensor<3x5x4xf32, #fusion.parallel<[serial, serial, didx], mesh = [0, 1, 2, 3]>>) -> tensor<3x5x4xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1, 2, 3]>> {
  %y = fusion.set %x : tensor<3x5x4xf32, #fusion.parallel<[serial, serial, didx], mesh = [0, 1, 2, 3]>> -> tensor<3x5x4xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<3x5x4xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1, 2, 3]>>
}
