// ARGS: -p 'stream-lowering{backend=copy-engine chunks=0}'
// Accepted: valid at the boundary (no diagnostic expected).
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
