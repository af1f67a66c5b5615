// A linear over 5 row blocks gathered from 4 devices in stream(3) chunks (2, 2 and 1 blocks).
func.func @main(%x: tensor<5x4x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2, 3]>>, %w: tensor<3x6xf32>) -> tensor<5x4x3xf32, #fusion.parallel<[stream(3), serial, serial], mesh = [0, 1, 2, 3]>> {
  %y = fusion.linear %x, %w : tensor<5x4x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2, 3]>>, tensor<3x6xf32> -> tensor<5x4x3xf32, #fusion.parallel<[stream(3), serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<5x4x3xf32, #fusion.parallel<[stream(3), serial, serial], mesh = [0, 1, 2, 3]>>
}
