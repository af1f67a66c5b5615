// The backward of the tensor-parallel MLP block of tp_mlp.mlir as hir.compile(..., training=True)
// imports it (AOT autograd's order): g[S=1, didx(D=2), M/D=16, H=32] is the output gradient's rows,
// h and a the forward's saved fc1 output and gelu, x_gathered its gathered input, w2 and w1 the
// blocks of W2 (transposed) and W1. Each linear's weight gradient comes before its input
// gradient; the last input gradient is reduce-scattered back to sharded rows.
func.func @main(%g: tensor<1x2x16x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>,
                %x_gathered: tensor<1x2x16x32xf32, #fusion.parallel<[serial, serial, serial, serial], mesh = [0, 1]>>,
                %h: tensor<2x1x2x16x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>,
                %a: tensor<2x1x2x16x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>,
                %w2: tensor<2x1x1x32x64xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0, 1]>>,
                %w1: tensor<2x1x1x64x32xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0, 1]>>)
    -> (tensor<2x64x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<2x32x64xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<1x2x16x32xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>) {
  %g_all = fusion.set %g : tensor<1x2x16x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> -> tensor<1x2x16x32xf32, #fusion.parallel<[serial, serial, serial, serial], mesh = [0, 1]>>
  %g_rows = fusion.reshape %g_all : tensor<1x2x16x32xf32, #fusion.parallel<[serial, serial, serial, serial], mesh = [0, 1]>> -> tensor<32x32xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %a_rows = fusion.reshape %a : tensor<2x1x2x16x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x32x64xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  %g_t = fusion.permute %g_rows perm = [1, 0] : tensor<32x32xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<32x32xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %dw2 = fusion.matmul %g_t, %a_rows : tensor<32x32xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x32x64xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x32x64xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  %da = fusion.matmul %g_all, %w2 : tensor<1x2x16x32xf32, #fusion.parallel<[serial, serial, serial, serial], mesh = [0, 1]>>, tensor<2x1x1x32x64xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x1x2x16x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>
  %dh = fusion.gelu_backward %da, %h approximate = none : tensor<2x1x2x16x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>, tensor<2x1x2x16x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x1x2x16x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>
  %x_rows = fusion.reshape %x_gathered : tensor<1x2x16x32xf32, #fusion.parallel<[serial, serial, serial, serial], mesh = [0, 1]>> -> tensor<32x32xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %dh_rows = fusion.reshape %dh : tensor<2x1x2x16x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x32x64xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  %dh_t = fusion.permute %dh_rows perm = [0, 2, 1] : tensor<2x32x64xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x64x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  %dw1 = fusion.matmul %dh_t, %x_rows : tensor<2x64x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<32x32xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<2x64x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  %dx_partial = fusion.matmul %dh, %w1 : tensor<2x1x2x16x64xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>, tensor<2x1x1x64x32xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x1x2x16x32xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>>
  %dx = fusion.sum %dx_partial dims = [0] : tensor<2x1x2x16x32xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0, 1]>> -> tensor<1x2x16x32xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %dw1, %dw2, %dx : tensor<2x64x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<2x32x64xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<1x2x16x32xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}
