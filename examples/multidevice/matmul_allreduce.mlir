// Row-parallel matmul + all-reduce, per chunk: K sharded over D=2 devices.
// A[S=4, didx(D), M/S=32, K/D=64] x B[didx(D), K/D, N=48] -> partial[stream(S), didx(D), M/S, N] -> sum over D.
func.func @main(%a: tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>,
                %b: tensor<2x64x48xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>)
    -> tensor<4x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x64x48xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<4x2x32x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<4x2x32x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<4x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<4x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
}
