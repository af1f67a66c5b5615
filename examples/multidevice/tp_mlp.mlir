// A tensor-parallel MLP block on 2 devices, rows in one chunk, as hir.compile imports it:
// x[S=1, didx(D=2), M/D=32, H=32] -> all-gather -> matmul by the column-parallel W1^T block
// [H, 4H/D=64] -> gelu -> matmul by the row-parallel W2^T block [4H/D, H] -> the partial sums
// over the devices (axis 0), reduce-scattered back to sharded rows.
func.func @main(%w1: tensor<2x1x1x32x64xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0, 1]>>,
                %w2: tensor<2x1x1x64x32xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0, 1]>>,
                %x: tensor<1x2x32x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>)
    -> tensor<1x2x32x32xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> {
  %h = fusion.matmul %x, %w1 : tensor<1x2x32x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x1x1x32x64xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x1x2x32x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>
  %g = fusion.gelu %h approximate = none : tensor<2x1x2x32x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x1x2x32x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>
  %p = fusion.matmul %g, %w2 : tensor<2x1x2x32x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>, tensor<2x1x1x64x32xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x1x2x32x32xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>
  %y = fusion.sum %p dims = [0] : tensor<2x1x2x32x32xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>> -> tensor<1x2x32x32xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<1x2x32x32xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}
