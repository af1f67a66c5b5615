// An all-to-all (didx axis 2 -> 0 of each chunk) in a stream loop, on the mesh [2, 0, 3, 1]: device 2 holds index 0.
func.func @main(%x: tensor<3x4x2x4xf32, #fusion.parallel<[serial, serial, serial, didx], mesh = [2, 0, 3, 1]>>) -> tensor<3x4x2x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [2, 0, 3, 1]>> {
  %y = fusion.set %x : tensor<3x4x2x4xf32, #fusion.parallel<[serial, serial, serial, didx], mesh = [2, 0, 3, 1]>> -> tensor<3x4x2x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [2, 0, 3, 1]>>
  func.return %y : tensor<3x4x2x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [2, 0, 3, 1]>>
}
