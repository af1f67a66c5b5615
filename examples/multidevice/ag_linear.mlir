// All-gather + linear with bias: X[S=4, didx(D=2), M/(S*D)=32, K=64], W[N=48, K], bias[N].
func.func @main(%x: tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>,
                %w: tensor<48x64xf32>, %bias: tensor<48xf32>)
    -> tensor<4x2x32x48xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  %y = fusion.linear %x, %w, %bias : tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<48x64xf32>, tensor<48xf32> -> tensor<4x2x32x48xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %y : tensor<4x2x32x48xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}
