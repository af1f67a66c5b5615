// A one-device mesh's shard moving to another one-device mesh: device 0 sends, device 1 receives.
// The output is held by device 1 alone; on device 0 the run returns None for it.
func.func @main(%x: tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [0]>>) -> tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [1]>> {
  %y = fusion.set %x : tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [0]>> -> tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [1]>>
  func.return %y : tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [1]>>
}
