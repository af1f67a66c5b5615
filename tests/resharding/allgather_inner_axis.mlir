// An all-gather along axis 1 (not outermost in memory): through an axis-first temporary.
func.func @main(%x: tensor<8x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>) -> tensor<8x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<8x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<8x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<8x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
}
