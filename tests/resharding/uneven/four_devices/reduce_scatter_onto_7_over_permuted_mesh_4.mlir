// The padded reduce-scatter onto 7 rows and the all-reduce of reduce_scatter_onto_7_over_4.mlir on the mesh
// [3, 1, 0, 2]: device 3 holds rows 0-1 of the sum.
func.func @main(%x: tensor<4x7x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [3, 1, 0, 2]>>, %y: tensor<5x6xbf16, #fusion.parallel<[didx, serial], mesh = [3, 1, 0, 2]>>) -> (tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [3, 1, 0, 2]>>, tensor<6xbf16, #fusion.parallel<[serial], mesh = [3, 1, 0, 2]>>) {
  %r = fusion.sum %x dims = [0] : tensor<4x7x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [3, 1, 0, 2]>> -> tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [3, 1, 0, 2]>>
  %s = fusion.sum %y dims = [0] : tensor<5x6xbf16, #fusion.parallel<[didx, serial], mesh = [3, 1, 0, 2]>> -> tensor<6xbf16, #fusion.parallel<[serial], mesh = [3, 1, 0, 2]>>
  func.return %r, %s : tensor<7x3xf32, #fusion.parallel<[didx, serial], mesh = [3, 1, 0, 2]>>, tensor<6xbf16, #fusion.parallel<[serial], mesh = [3, 1, 0, 2]>>
}
