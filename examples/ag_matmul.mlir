// The all-gather + GEMM overlap of tensor parallelism (DESIGN.md section 4, multi-device):
// A[S, didx(D), M/(S*D), K] x B[K, N] -> C[stream(S), D, M/(S*D), N], here S=4, D=2, M=512.
func.func @main(%a: tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>,
                %b: tensor<256x128xf32>)
    -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<256x128xf32> -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %c : tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}
