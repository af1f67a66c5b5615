func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{mesh device ids must be distinct and non-negative, got [-1]}}
  %r = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [-1]>>
  func.return %x : tensor<4x8xf32>
}
