// One index over 2 devices: device 1 holds none. A scatter, a tanh on the shards, the sum over
// the didx axis (device 1's partial sum is zeros) and the sharded output gathered back.
func.func @main(%x: tensor<1x6xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> (tensor<6xf32, #fusion.parallel<[serial], mesh = [0, 1]>>, tensor<1x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) {
  %y = fusion.set %x : tensor<1x6xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<1x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %t = fusion.tanh %y : tensor<1x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<1x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %s = fusion.sum %t dims = [0] : tensor<1x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<6xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  func.return %s, %t : tensor<6xf32, #fusion.parallel<[serial], mesh = [0, 1]>>, tensor<1x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
