// Unannotated values next to 5 rows over 2 devices (3 and 2): with propagate-sharding=true they
// take the same uneven chunks and everything computes on the shards, with no communication
// (tests/lit/passes/fusion-propagate-sharding/rules.mlir, @uneven); without, %r and %e are gathered.
func.func @main(%x: tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %b: tensor<5x8xf32>, %w: tensor<8xf32>) -> (tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) {
  %r = fusion.relu %x : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x8xf32>
  %e = fusion.exp %r : tensor<5x8xf32> -> tensor<5x8xf32>
  %o = fusion.neg %e : tensor<5x8xf32> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %t = fusion.tanh %b : tensor<5x8xf32> -> tensor<5x8xf32>
  %w1 = fusion.neg %w : tensor<8xf32> -> tensor<8xf32>
  %wb = fusion.broadcast %w1 dims = [0] : tensor<8xf32> -> tensor<5x8xf32>
  %y = fusion.add %t, %wb : tensor<5x8xf32>, tensor<5x8xf32> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %o, %y : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
