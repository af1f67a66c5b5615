// A sum over the didx axis reduce-scattered onto the inner axis (3 columns over 3 devices), f16.
func.func @main(%x: tensor<3x4x3xf16, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>>) -> tensor<4x3xf16, #fusion.parallel<[serial, didx], mesh = [2, 0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<3x4x3xf16, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>> -> tensor<4x3xf16, #fusion.parallel<[serial, didx], mesh = [2, 0, 1]>>
  func.return %y : tensor<4x3xf16, #fusion.parallel<[serial, didx], mesh = [2, 0, 1]>>
}
