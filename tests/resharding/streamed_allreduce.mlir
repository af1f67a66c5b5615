// A sum over the sharded axis with a stream-parallel, replicated result (nvFuser's
// MultiDeviceStreamParallelTypeTest.Allreduce): per row i, a local sum of the device's shard, then
// an all-reduce of that row.
func.func @main(%x: tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [1] : tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
}
