// A max over the didx axis: the operand is all-gathered first, then each device takes the max.
func.func @main(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>> {
  %m = fusion.max %x dims = [0] : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  func.return %m : tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
}
