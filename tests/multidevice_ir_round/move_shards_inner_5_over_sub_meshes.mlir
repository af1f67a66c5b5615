// An inner axis of 5 over the sub-mesh [0, 2] (3 and 2) moved to [2, 1]: device 2 keeps nothing it held.
func.func @main(%x: tensor<3x5x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 2]>>) -> tensor<3x5x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 1]>> {
  %r = fusion.neg %x : tensor<3x5x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 2]>> -> tensor<3x5x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 2]>>
  %y = fusion.set %r : tensor<3x5x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 2]>> -> tensor<3x5x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 1]>>
  func.return %y : tensor<3x5x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 1]>>
}
