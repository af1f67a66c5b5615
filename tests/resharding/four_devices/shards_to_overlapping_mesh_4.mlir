// Shards moving to an overlapping mesh: [0, 1, 2] -> [0, 2, 3] keeps device 0's shard in place,
// device 1 sends to 2 and device 2 to 3 (device 2 receives before it sends: the pairs go in order).
// In a stream loop over the rows: each iteration moves its row of every shard.
func.func @main(%x: tensor<4x3x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2]>>) -> tensor<4x3x6xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 2, 3]>> {
  %y = fusion.set %x : tensor<4x3x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2]>> -> tensor<4x3x6xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 2, 3]>>
  func.return %y : tensor<4x3x6xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 2, 3]>>
}
