// Accepted: stream(3) over 4 rows (chunks of 2, 2 and an empty last one).
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %r = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream(3), serial]>>
  func.return %x : tensor<4x8xf32>
}
