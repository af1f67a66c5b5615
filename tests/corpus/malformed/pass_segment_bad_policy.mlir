// ARGS: -p 'fusion-segment{policy=fastest}'
// Refused: unknown policy 'fastest', expected one of: standalone-host-ops, resharding-only
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
