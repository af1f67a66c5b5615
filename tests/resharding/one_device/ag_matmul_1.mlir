// The all-gather + GEMM on one device: A[S=4, didx(D=1), M/S=16, K=32] x B[K, N=24], a loop over
// the S chunks, each gathering its chunk of A over the mesh [0] before its GEMM.
func.func @main(%a: tensor<4x1x16x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0]>>,
                %b: tensor<32x24xf32>)
    -> tensor<4x1x16x24xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<4x1x16x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0]>>, tensor<32x24xf32> -> tensor<4x1x16x24xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %c : tensor<4x1x16x24xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}
