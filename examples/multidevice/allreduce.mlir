// A plain all-reduce: a sum over the sharded axis.
func.func @main(%x: tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>)
    -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}
