func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.relu' op result: didx axis 0 has extent 4 but the mesh has 2 devices}}
  %r = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %x : tensor<4x8xf32>
}
