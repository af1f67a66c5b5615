// 5 rows over the sub-mesh [2, 0] (3 and 2) -> 4 columns (2 each): rank 1 holds nothing.
func.func @main(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [2, 0]>>) -> tensor<5x4xf32, #fusion.parallel<[serial, didx], mesh = [2, 0]>> {
  %y = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [2, 0]>> -> tensor<5x4xf32, #fusion.parallel<[serial, didx], mesh = [2, 0]>>
  func.return %y : tensor<5x4xf32, #fusion.parallel<[serial, didx], mesh = [2, 0]>>
}
