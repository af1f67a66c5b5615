// A reduce-scatter over a mesh of one device: sum over the sharded axis 0, the result sharded on
// the next one.
func.func @main(%x: tensor<1x1x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0]>>)
    -> tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>> {
  %y = fusion.sum %x dims = [0] : tensor<1x1x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0]>> -> tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>
  func.return %y : tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>
}
