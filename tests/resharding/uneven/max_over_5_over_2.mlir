// A max over the uneven didx axis: fusion-decompose-resharding gathers the operand first (the
// padded all-gather), then every device takes the max of the whole.
func.func @main(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>> {
  %y = fusion.max %x dims = [0] : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  func.return %y : tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
}
