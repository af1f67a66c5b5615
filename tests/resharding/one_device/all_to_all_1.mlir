// didx axis 0 -> didx axis 1 on one device (an all-to-all over the mesh [0]), then an add of a
// replicated operand sliced as the result is.
func.func @main(%x: tensor<1x1x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>,
                %b: tensor<1x1x5xf32, #fusion.parallel<[serial, serial, serial], mesh = [0]>>)
    -> tensor<1x1x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0]>> {
  %y = fusion.set %x : tensor<1x1x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>> -> tensor<1x1x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0]>>
  %z = fusion.add %y, %b : tensor<1x1x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0]>>, tensor<1x1x5xf32, #fusion.parallel<[serial, serial, serial], mesh = [0]>> -> tensor<1x1x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0]>>
  func.return %z : tensor<1x1x5xf32, #fusion.parallel<[serial, didx, serial], mesh = [0]>>
}
