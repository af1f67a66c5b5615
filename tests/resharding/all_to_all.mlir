// didx axis 0 -> didx axis 1 (an all-to-all): an all-gather along 0, then each device's slice along 1.
func.func @main(%x: tensor<2x2x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<2x2x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x2x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}
