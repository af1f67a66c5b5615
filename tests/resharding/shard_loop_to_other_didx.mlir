// A loop over the shards of axis 0 whose result is sharded on axis 1 (an all-to-all by loop):
// iteration i broadcasts device i's shard, and each device keeps its slice of it.
func.func @main(%x: tensor<2x2x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x3xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>> {
  %y = fusion.relu %x : tensor<2x2x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x3xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x2x3xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
}
