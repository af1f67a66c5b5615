// All-gather + GEMM with the host loop over the devices' shards (nvFuser's didx -> stream):
// A[didx(D=2), M/D=64, K=256] x B[K, N=128] -> C[stream(D), M/D, N]. Iteration i needs device i's
// shard: a broadcast from device i (NCCL), or, starting with each device's own shard, with
// -p 'stream-lowering{backend=copy-engine}' copy-engine pushes into the peers' symmetric memory,
// with -p 'stream-lowering{backend=ring}' a ring of collective-permutes (each shard is passed on
// to the previous device while the GEMM of the one that arrived runs).
func.func @main(%a: tensor<2x64x256xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>,
                %b: tensor<256x128xf32>)
    -> tensor<2x64x128xf32, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x64x256xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<256x128xf32> -> tensor<2x64x128xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<2x64x128xf32, #fusion.parallel<[stream, serial, serial]>>
}
