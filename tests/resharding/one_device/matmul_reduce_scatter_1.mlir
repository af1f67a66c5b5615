// GEMM + reduce-scatter on one device: A[S=4, didx(1), 1, 8, K=16] x B[1, didx(1), 1, K, N=12],
// the partial products summed over the sharded K axis and scattered over the mesh [0].
func.func @main(%a: tensor<4x1x1x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0]>>,
                %b: tensor<1x1x1x16x12xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0]>>)
    -> tensor<4x1x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>> {
  %p = fusion.matmul %a, %b : tensor<4x1x1x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0]>>, tensor<1x1x1x16x12xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0]>> -> tensor<4x1x1x8x12xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0]>>
  %c = fusion.sum %p dims = [1] : tensor<4x1x1x8x12xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0]>> -> tensor<4x1x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>>
  func.return %c : tensor<4x1x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>>
}
