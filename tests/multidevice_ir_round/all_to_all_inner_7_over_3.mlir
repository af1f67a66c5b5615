// An inner axis of 7 over 3 (3, 3, 1) -> the innermost 4 over 3 (2, 2, 0), f16.
func.func @main(%x: tensor<3x7x4xf16, #fusion.parallel<[serial, didx, serial], mesh = [1, 2, 0]>>) -> tensor<3x7x4xf16, #fusion.parallel<[serial, serial, didx], mesh = [1, 2, 0]>> {
  %y = fusion.set %x : tensor<3x7x4xf16, #fusion.parallel<[serial, didx, serial], mesh = [1, 2, 0]>> -> tensor<3x7x4xf16, #fusion.parallel<[serial, serial, didx], mesh = [1, 2, 0]>>
  func.return %y : tensor<3x7x4xf16, #fusion.parallel<[serial, serial, didx], mesh = [1, 2, 0]>>
}
