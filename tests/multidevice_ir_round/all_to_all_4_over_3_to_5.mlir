// 4 rows over 3 devices (2, 2 and an empty shard) -> 5 columns (2, 2, 1), after a relu on the shards.
func.func @main(%x: tensor<4x5x2xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>>) -> tensor<4x5x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 0, 1]>> {
  %r = fusion.relu %x : tensor<4x5x2xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>> -> tensor<4x5x2xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>>
  %y = fusion.set %r : tensor<4x5x2xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>> -> tensor<4x5x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 0, 1]>>
  func.return %y : tensor<4x5x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 0, 1]>>
}
