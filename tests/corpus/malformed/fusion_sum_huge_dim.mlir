func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{Integer value 99999999999999999999999 is out of range for type i64 which supports values in the range [-922337}}
  %r = fusion.sum %x dims = [99999999999999999999999] : tensor<4x8xf32> -> tensor<8xf32>
  func.return %x : tensor<4x8xf32>
}
