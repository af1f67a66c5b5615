// GEMM + reduce-scatter by send/recv on 4 devices (reduce_scatter_send_recv.mlir with D=4): B's
// extent-1 broadcast axis feeds the result's didx axis, so every device gets each K shard of B
// whole (a hir.broadcast from device i in iteration i), never a didx shard of one index.
func.func @main(%a: tensor<4x4x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>>,
                %b: tensor<4x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>)
    -> tensor<4x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>> {
  %bb = fusion.broadcast %b dims = [1] : tensor<4x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>
  %cu = fusion.matmul %a, %bb : tensor<4x4x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<4x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x4x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>>
  %c = fusion.sum %cu dims = [0] : tensor<4x4x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %c : tensor<4x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>
}
