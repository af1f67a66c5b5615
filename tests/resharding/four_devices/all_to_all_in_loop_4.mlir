// An all-to-all (didx axis 2 -> 0 of each chunk) in a stream loop over axis 0, on 4 devices.
func.func @main(%x: tensor<3x4x2x4xf32, #fusion.parallel<[serial, serial, serial, didx], mesh = [0, 1, 2, 3]>>) -> tensor<3x4x2x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>> {
  %y = fusion.set %x : tensor<3x4x2x4xf32, #fusion.parallel<[serial, serial, serial, didx], mesh = [0, 1, 2, 3]>> -> tensor<3x4x2x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<3x4x2x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>>
}
