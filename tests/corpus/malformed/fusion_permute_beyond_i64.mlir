func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{Integer value 18446744073709551616 is out of range for type i64 which supports values in the range [-922337203}}
  %r = fusion.permute %x perm = [18446744073709551616, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  func.return %x : tensor<4x8xf32>
}
