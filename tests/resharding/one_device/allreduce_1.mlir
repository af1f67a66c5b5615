// An all-reduce over a mesh of one device: a sum over the sharded axis, then a relu.
func.func @main(%x: tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>)
    -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>> {
  %y = fusion.sum %x dims = [0] : tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>> -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>>
  %z = fusion.relu %y : tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>> -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>>
  func.return %z : tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>>
}
