// 5 rows over 2 devices (3 and 2): a relu on the shards, then the all-gather, which pads the
// second device's 2 rows to 3, gathers 6 and keeps the first 5.
func.func @main(%x: tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<5x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %y = fusion.relu %x : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %z = fusion.set %y : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %z : tensor<5x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}
