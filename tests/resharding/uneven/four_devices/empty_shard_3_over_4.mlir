// 3 columns over 4 devices (1, 1, 1, 0: the last device holds none): a scatter, a neg on the
// shards, a sum over the rows, the all-gather and the sharded output gathered back.
func.func @main(%x: tensor<5x3xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>) -> (tensor<5x3xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>, tensor<3xf32, #fusion.parallel<[serial], mesh = [0, 1, 2, 3]>>) {
  %y = fusion.set %x : tensor<5x3xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<5x3xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
  %n = fusion.neg %y : tensor<5x3xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> -> tensor<5x3xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
  %s = fusion.sum %n dims = [0] : tensor<5x3xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> -> tensor<3xf32, #fusion.parallel<[didx], mesh = [0, 1, 2, 3]>>
  %g = fusion.set %s : tensor<3xf32, #fusion.parallel<[didx], mesh = [0, 1, 2, 3]>> -> tensor<3xf32, #fusion.parallel<[serial], mesh = [0, 1, 2, 3]>>
  func.return %n, %g : tensor<5x3xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>, tensor<3xf32, #fusion.parallel<[serial], mesh = [0, 1, 2, 3]>>
}
