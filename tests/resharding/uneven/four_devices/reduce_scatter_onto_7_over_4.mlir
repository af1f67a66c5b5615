// A sum over the didx axis (4 over 4) onto 7 rows over 4 devices (2, 2, 2, 1): padded to 8,
// reduce-scattered in blocks of 2; and a bf16 sum over 5 rows over 4 (2, 2, 1, 0) all-reduced.
func.func @main(%x: tensor<4x7x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>, %y: tensor<5x6xbf16, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>) -> (tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>, tensor<6xbf16, #fusion.parallel<[serial], mesh = [0, 1, 2, 3]>>) {
  %r = fusion.sum %x dims = [0] : tensor<4x7x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>
  %s = fusion.sum %y dims = [0] : tensor<5x6xbf16, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<6xbf16, #fusion.parallel<[serial], mesh = [0, 1, 2, 3]>>
  func.return %r, %s : tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>, tensor<6xbf16, #fusion.parallel<[serial], mesh = [0, 1, 2, 3]>>
}
