// ARGS: -p 'stream-lowering'
// Accepted: valid at the boundary (no diagnostic expected).
func.func @main(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %r = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %s = fusion.sum %r dims = [0] : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<8xf32>
  func.return %s : tensor<8xf32>
}
