// The tensor-parallel MLP block on a mesh of one device (rows in one chunk), as hir.compile
// imports it with mesh=[0]: all-gather, column-parallel matmul, gelu, row-parallel matmul, and
// the sum of the partial products reduce-scattered back to sharded rows.
func.func @main(%w1: tensor<1x1x1x16x32xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0]>>,
                %w2: tensor<1x1x1x32x16xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0]>>,
                %x: tensor<1x1x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0]>>)
    -> tensor<1x1x8x16xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>> {
  %h = fusion.matmul %x, %w1 : tensor<1x1x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0]>>, tensor<1x1x1x16x32xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0]>> -> tensor<1x1x1x8x32xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0]>>
  %g = fusion.gelu %h approximate = none : tensor<1x1x1x8x32xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0]>> -> tensor<1x1x1x8x32xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0]>>
  %p = fusion.matmul %g, %w2 : tensor<1x1x1x8x32xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0]>>, tensor<1x1x1x32x16xf32, #fusion.parallel<[didx, serial, serial, serial, serial], mesh = [0]>> -> tensor<1x1x1x8x16xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0]>>
  %y = fusion.sum %p dims = [0] : tensor<1x1x1x8x16xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0]>> -> tensor<1x1x8x16xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>>
  func.return %y : tensor<1x1x8x16xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>>
}
