// A scatter from device 1 to the mesh [0, 1]: a broadcast from device 1, then each device's slice.
func.func @main(%x: tensor<8x2xf32, #fusion.parallel<[serial, serial], mesh = [1]>>) -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<8x2xf32, #fusion.parallel<[serial, serial], mesh = [1]>> -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  %z = fusion.neg %y : tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %z : tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}
