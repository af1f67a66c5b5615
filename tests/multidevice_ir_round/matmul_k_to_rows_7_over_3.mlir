// A matmul contracting K = 7 over 3 devices whose result is sharded on its 7 rows.
func.func @main(%a: tensor<7x7xf32, #fusion.parallel<[serial, didx], mesh = [2, 0, 1]>>, %b: tensor<7x5xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 1]>>) -> tensor<7x5xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 1]>> {
  %c = fusion.matmul %a, %b : tensor<7x7xf32, #fusion.parallel<[serial, didx], mesh = [2, 0, 1]>>, tensor<7x5xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 1]>> -> tensor<7x5xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 1]>>
  func.return %c : tensor<7x5xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 1]>>
}
