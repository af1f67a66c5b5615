// ARGS: -p 'no-such-pass'
// Refused: unknown pass 'no-such-pass'
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
