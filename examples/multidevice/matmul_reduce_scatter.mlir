// GEMM + reduce-scatter, per chunk: K sharded over D=2; each device keeps its M/D rows of the sum.
// A[S=4, didx(D), D, M/(S*D)=16, K/D=64] x B[1, didx(D), 1, K/D, N=48] -> partial[stream(S), didx(D), D, 16, N]
// -> sum over the sharded K axis, scattered over the destination axis: C[stream(S), didx(D), 16, N].
func.func @main(%a: tensor<4x2x2x16x64xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>,
                %b: tensor<1x2x1x64x48xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<4x2x2x16x64xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>, tensor<1x2x1x64x48xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<4x2x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<4x2x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}
