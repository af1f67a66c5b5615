// A row-parallel matmul + all-reduce over 7 rows in stream(3) chunks (3, 3 and 1 rows).
func.func @main(%a: tensor<7x2x4xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, %b: tensor<2x4x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<7x5xf32, #fusion.parallel<[stream(3), serial], mesh = [0, 1]>> {
  %at = fusion.permute %a perm = [1, 0, 2] : tensor<7x2x4xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<2x7x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  %p = fusion.matmul %at, %b : tensor<2x7x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x7x5xf32, #fusion.parallel<[didx, stream(3), serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [0] : tensor<2x7x5xf32, #fusion.parallel<[didx, stream(3), serial], mesh = [0, 1]>> -> tensor<7x5xf32, #fusion.parallel<[stream(3), serial], mesh = [0, 1]>>
  func.return %c : tensor<7x5xf32, #fusion.parallel<[stream(3), serial], mesh = [0, 1]>>
}
