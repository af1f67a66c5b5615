// Reduce-based GEMM + reduce-scatter on D=4 with a bias and a relu between the GEMM and the sum
// (one fused loop): iteration i reduces chunk i to device i.
func.func @main(%a: tensor<4x4x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>>,
                %b: tensor<4x1x16x8xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>,
                %bias: tensor<4x4x8x8xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>)
    -> tensor<4x8x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>> {
  %p = fusion.matmul %a, %b : tensor<4x4x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<4x1x16x8xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x4x8x8xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>>
  %q = fusion.add %p, %bias : tensor<4x4x8x8xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<4x4x8x8xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x4x8x8xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>>
  %cu = fusion.relu %q : tensor<4x4x8x8xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x4x8x8xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>>
  %c = fusion.sum %cu dims = [0] : tensor<4x4x8x8xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x8x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %c : tensor<4x8x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>
}
