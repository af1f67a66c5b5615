func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{operand is used with type tensor<4x8xf16>, but has been previously used or defined with type tensor<4x8xf32>}}
  %r = fusion.add %x, %y : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4x8xf32>
  func.return %x : tensor<4x8xf32>
}
