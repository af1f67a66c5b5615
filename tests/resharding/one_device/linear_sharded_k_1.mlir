// A linear contracting a sharded K axis of one index on one device: X is gathered first.
func.func @main(%x: tensor<4x1xf32, #fusion.parallel<[serial, didx], mesh = [0]>>, %w: tensor<6x1xf32>)
    -> tensor<4x6xf32, #fusion.parallel<[stream(2), serial], mesh = [0]>> {
  %y = fusion.linear %x, %w : tensor<4x1xf32, #fusion.parallel<[serial, didx], mesh = [0]>>, tensor<6x1xf32> -> tensor<4x6xf32, #fusion.parallel<[stream(2), serial], mesh = [0]>>
  func.return %y : tensor<4x6xf32, #fusion.parallel<[stream(2), serial], mesh = [0]>>
}
