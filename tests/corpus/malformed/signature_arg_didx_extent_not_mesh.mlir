// Accepted: a didx extent other than the mesh size is sharded in chunks of ceil(4/2) = 2 (no diagnostic expected).
func.func @main(%x: tensor<4xf32, #fusion.parallel<[didx], mesh = [0, 1]>>) {
  func.return
}
