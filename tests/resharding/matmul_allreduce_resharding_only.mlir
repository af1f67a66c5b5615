// The row-parallel matmul + all-reduce, to be lowered with policy=resharding-only: the sum over
// the didx axis stays its own (communication) unit.
func.func @main(%a: tensor<2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<2x16x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x8x8xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x16x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x8xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<2x2x8x8xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x8xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  %r = fusion.relu %c : tensor<2x8x8xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>> -> tensor<2x8x8xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  func.return %r : tensor<2x8x8xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
}
