func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{stream(99999999999999999999): the chunk count is out of range (at most 2^63 - 1)}}
  %r = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream(99999999999999999999), serial]>>
  func.return %x : tensor<4x8xf32>
}
