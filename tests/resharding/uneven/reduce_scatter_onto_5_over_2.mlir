// A sum over the didx axis onto 5 rows over 2 devices: the local partial padded to 6 rows,
// reduce-scattered in blocks of 3, each device keeping its 3 or 2.
func.func @main(%x: tensor<2x5x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<2x5x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
