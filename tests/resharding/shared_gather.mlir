// Two ops that need %x gathered the same way share one all-gather (fusion-decompose-resharding
// inserts one set for both); a third needs it streamed and gets its own.
func.func @main(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> (tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>) {
  %r = fusion.relu %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %e = fusion.exp %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %n = fusion.neg %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
  func.return %r, %e, %n : tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
}
