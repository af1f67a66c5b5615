// Shards moving between disjoint meshes along the same axis: device k of [0, 1] sends its rows to
// device k of [2, 3] (hir.send / hir.recv), where a relu runs on them.
func.func @main(%x: tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 3]>> {
  %m = fusion.set %x : tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 3]>>
  %y = fusion.relu %m : tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 3]>> -> tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 3]>>
  func.return %y : tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 3]>>
}
