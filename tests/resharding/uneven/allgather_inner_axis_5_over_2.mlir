// The uneven axis inside: the padded shard and the gathered temporary have it first (permutes).
func.func @main(%x: tensor<4x5x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>) -> tensor<4x5x6xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>> {
  %y = fusion.mul %x, %x : tensor<4x5x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, tensor<4x5x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<4x5x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  %z = fusion.set %y : tensor<4x5x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<4x5x6xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
  func.return %z : tensor<4x5x6xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
}
