// Replicated -> sharded on the same mesh: each device copies its own slice, no communication.
func.func @main(%x: tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
