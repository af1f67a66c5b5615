// A sum over the uneven didx axis: each device sums its 3 or 2 rows (after a cast and a mul on
// the shards), then the all-reduce.
func.func @main(%x: tensor<5x4xbf16, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %s: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>> {
  %c = fusion.cast %x : tensor<5x4xbf16, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %m = fusion.mul %c, %s : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %y = fusion.sum %m dims = [0] : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  func.return %y : tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
}
