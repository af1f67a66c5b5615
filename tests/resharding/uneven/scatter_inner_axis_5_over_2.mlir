// A scatter onto 5 columns over 2 devices (3 and 2, no communication), an exp on the shards,
// the output left sharded (the runtime gathers it back by the same rule).
func.func @main(%x: tensor<8x5xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> tensor<8x5xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<8x5xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<8x5xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  %z = fusion.exp %y : tensor<8x5xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> -> tensor<8x5xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %z : tensor<8x5xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}
