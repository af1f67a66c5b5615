// The GEMM + reduce-scatter by send/recv on one device:
// A[didx(1), stream(1), M=8, K=16] x broadcast(B)[didx(1), 1, K, N=4] -> Cu[stream(1), didx(1), M, N],
// then the sum over the stream axis: every loop over the shards has one iteration.
func.func @main(%a: tensor<1x1x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0]>>,
                %b: tensor<1x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>)
    -> tensor<1x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>> {
  %bb = fusion.broadcast %b dims = [1] : tensor<1x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>> -> tensor<1x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0]>>
  %cu = fusion.matmul %a, %bb : tensor<1x1x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0]>>, tensor<1x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0]>> -> tensor<1x1x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>>
  %c = fusion.sum %cu dims = [0] : tensor<1x1x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>> -> tensor<1x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>
  func.return %c : tensor<1x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>
}
