func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.relu' op result has type tensor<99999999999999999999x8xf32>: extent 99999999999999999999 is out of ran}}
  %r = fusion.relu %x : tensor<4x8xf32> -> tensor<99999999999999999999x8xf32>
  func.return %x : tensor<4x8xf32>
}
