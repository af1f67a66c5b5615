// 7 rows over the mesh [2, 0, 3, 1] (2, 2, 2, 1 rows; device 2 holds rows 0-1): a relu on the shards, then
// the padded all-gather, whose pieces the communicator puts in mesh order, not rank order.
func.func @main(%x: tensor<7x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 3, 1]>>) -> tensor<7x8xf32, #fusion.parallel<[serial, serial], mesh = [2, 0, 3, 1]>> {
  %y = fusion.relu %x : tensor<7x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 3, 1]>> -> tensor<7x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 3, 1]>>
  %z = fusion.set %y : tensor<7x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 0, 3, 1]>> -> tensor<7x8xf32, #fusion.parallel<[serial, serial], mesh = [2, 0, 3, 1]>>
  func.return %z : tensor<7x8xf32, #fusion.parallel<[serial, serial], mesh = [2, 0, 3, 1]>>
}
