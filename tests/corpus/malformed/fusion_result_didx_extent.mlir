func.func @main(%x: tensor<0x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.relu' op result: didx axis 0 has extent 0: a sharded axis needs at least one index}}
  %r = fusion.relu %x : tensor<0x8xf32> -> tensor<0x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x8xf32>
}
