// ARGS: -p 'stream-lowering'
// expected-error@+1 {{'func.func' op argument #1 has type index: a fusion-level function takes and returns tensors}}
func.func @main(%x: tensor<4x8xf32>, %s: index) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %r = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
