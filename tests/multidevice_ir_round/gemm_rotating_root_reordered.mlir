// GEMM + reduce to a rotating root whose result lists the devices in another order.
func.func @main(%a: tensor<1x3x3x2x8xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [2, 0, 1]>>, %b: tensor<1x3x1x8x6xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [2, 0, 1]>>) -> tensor<1x3x2x6xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2]>> {
  %p = fusion.matmul %a, %b : tensor<1x3x3x2x8xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [2, 0, 1]>>, tensor<1x3x1x8x6xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [2, 0, 1]>> -> tensor<1x3x3x2x6xf32, #fusion.parallel<[serial, didx, stream, serial, serial], mesh = [2, 0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<1x3x3x2x6xf32, #fusion.parallel<[serial, didx, stream, serial, serial], mesh = [2, 0, 1]>> -> tensor<1x3x2x6xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2]>>
  func.return %c : tensor<1x3x2x6xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2]>>
}
