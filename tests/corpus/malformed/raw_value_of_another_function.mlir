func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
func.func @main(%y: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// expected-error@+1 {{values used but not defined: [%x]}}
