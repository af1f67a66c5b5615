// Accepted: valid at the boundary (no diagnostic expected).
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %a = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0]>>
  %r = fusion.add %a, %y : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0]>>, tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
  func.return %x : tensor<4x8xf32>
}
