// GEMM + reduce-scatter per stream(2) chunk of 7 row blocks (4 and 3) on [2, 0, 1]: the chunk's didx axis is not outermost, so the partials go through axis-first temporaries.
func.func @main(%a: tensor<7x3x3x3x8xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [2, 0, 1]>>, %b: tensor<1x3x1x8x6xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [2, 0, 1]>>) -> tensor<7x3x3x6xf32, #fusion.parallel<[stream(2), didx, serial, serial], mesh = [2, 0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<7x3x3x3x8xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [2, 0, 1]>>, tensor<1x3x1x8x6xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [2, 0, 1]>> -> tensor<7x3x3x3x6xf32, #fusion.parallel<[stream(2), didx, serial, serial, serial], mesh = [2, 0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<7x3x3x3x6xf32, #fusion.parallel<[stream(2), didx, serial, serial, serial], mesh = [2, 0, 1]>> -> tensor<7x3x3x6xf32, #fusion.parallel<[stream(2), didx, serial, serial], mesh = [2, 0, 1]>>
  func.return %c : tensor<7x3x3x6xf32, #fusion.parallel<[stream(2), didx, serial, serial], mesh = [2, 0, 1]>>
}
