// ARGS: -p 'stream-lowering{backend=copy-engine chunks=-3}'
// Refused: chunks must be >= 0 (0: chosen from the sizes), got -3
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
