// didx axis 0 -> didx axis 1 on the mesh [1, 0] (device 1 holds index 0): the pieces follow the mesh's order.
func.func @main(%x: tensor<2x2x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [1, 0]>>) -> tensor<2x2x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [1, 0]>> {
  %y = fusion.set %x : tensor<2x2x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [1, 0]>> -> tensor<2x2x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [1, 0]>>
  func.return %y : tensor<2x2x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [1, 0]>>
}
