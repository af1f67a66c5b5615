// A loop over the shards of an inner axis: each iteration's shard is broadcast into a contiguous
// temporary, then copied into the strided view of the gathered operand.
func.func @main(%x: tensor<6x2x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, %w: tensor<6xf32>) -> tensor<6x2xf32, #fusion.parallel<[serial, stream], mesh = [0, 1]>> {
  %y = fusion.linear %x, %w : tensor<6x2x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, tensor<6xf32> -> tensor<6x2xf32, #fusion.parallel<[serial, stream], mesh = [0, 1]>>
  func.return %y : tensor<6x2xf32, #fusion.parallel<[serial, stream], mesh = [0, 1]>>
}
