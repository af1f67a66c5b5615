// An all-to-all whose axes come after a longer one: through axis-first temporaries and permutes.
func.func @main(%x: tensor<4x2x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>) -> tensor<4x2x2xf32, #fusion.parallel<[serial, serial, didx], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<4x2x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<4x2x2xf32, #fusion.parallel<[serial, serial, didx], mesh = [0, 1]>>
  func.return %y : tensor<4x2x2xf32, #fusion.parallel<[serial, serial, didx], mesh = [0, 1]>>
}
