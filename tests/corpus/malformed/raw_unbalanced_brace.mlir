func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
// expected-error@+1 {{the input ends inside the region opened at line 1:53}}
