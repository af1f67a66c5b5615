// A max over the didx axis, streamed on axis 1: each chunk is all-gathered, then reduced.
func.func @main(%x: tensor<4x6x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>) -> tensor<6x8xf32, #fusion.parallel<[stream(3), serial], mesh = [0, 1, 2, 3]>> {
  %m = fusion.max %x dims = [0] : tensor<4x6x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<6x8xf32, #fusion.parallel<[stream(3), serial], mesh = [0, 1, 2, 3]>>
  func.return %m : tensor<6x8xf32, #fusion.parallel<[stream(3), serial], mesh = [0, 1, 2, 3]>>
}
