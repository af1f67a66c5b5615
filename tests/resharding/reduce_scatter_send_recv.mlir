// GEMM + reduce-scatter by send/recv (nvFuser's RSMatmulTest.ReduceScatterP2p): K sharded over D=2,
// B broadcast along a new extent-1 axis; the matmul moves the sharded axis: the result's didx axis
// is fed by A's stream axis and by B's extent-1 axis, its stream axis by the K shards, which the
// sum over the stream axis adds. B's extent-1 axis is a broadcast: every device gets B whole, one
// K shard per iteration (a hir.broadcast from device i), never a didx shard of one index.
func.func @main(%a: tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>,
                %b: tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %bb = fusion.broadcast %b dims = [1] : tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>
  %cu = fusion.matmul %a, %bb : tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>, tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %cu dims = [0] : tensor<2x2x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}
