func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'fusion.relu' op operand #0 (%b) is used before it is defined, or out of its scope}}
  %a = fusion.relu %b : tensor<4xf32> -> tensor<4xf32>
  %b = fusion.relu %x : tensor<4xf32> -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
