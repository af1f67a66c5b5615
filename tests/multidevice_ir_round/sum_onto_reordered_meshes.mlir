// Sums over the didx axis of [2, 0, 1] into the same devices in other orders: replicated and sharded.
func.func @main(%x: tensor<3x6x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>>) -> (tensor<6x4xf32, #fusion.parallel<[serial, serial], mesh = [1, 2, 0]>>, tensor<6x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 2, 1]>>) {
  %r = fusion.sum %x dims = [0] : tensor<3x6x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>> -> tensor<6x4xf32, #fusion.parallel<[serial, serial], mesh = [1, 2, 0]>>
  %s = fusion.sum %x dims = [0] : tensor<3x6x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>> -> tensor<6x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 2, 1]>>
  func.return %r, %s : tensor<6x4xf32, #fusion.parallel<[serial, serial], mesh = [1, 2, 0]>>, tensor<6x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 2, 1]>>
}
