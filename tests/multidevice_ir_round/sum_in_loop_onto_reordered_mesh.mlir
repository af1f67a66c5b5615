// A reduce-scatter per chunk of a stream loop onto the reordered mesh [1, 0, 2].
func.func @main(%x: tensor<4x3x3x5xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [2, 0, 1]>>) -> tensor<4x3x5xf32, #fusion.parallel<[stream, didx, serial], mesh = [1, 0, 2]>> {
  %y = fusion.sum %x dims = [1] : tensor<4x3x3x5xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [2, 0, 1]>> -> tensor<4x3x5xf32, #fusion.parallel<[stream, didx, serial], mesh = [1, 0, 2]>>
  func.return %y : tensor<4x3x5xf32, #fusion.parallel<[stream, didx, serial], mesh = [1, 0, 2]>>
}
