// A one-device mesh's shard moving to another device: device 0 sends, device 1 receives and adds.
func.func @main(%x: tensor<1x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>, %b: tensor<4x8xf32>) -> tensor<1x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [1]>> {
  %m = fusion.set %x : tensor<1x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>> -> tensor<1x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [1]>>
  %bb = fusion.broadcast %b dims = [0] : tensor<4x8xf32> -> tensor<1x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [1]>>
  %y = fusion.add %m, %bb : tensor<1x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [1]>>, tensor<1x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [1]>> -> tensor<1x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [1]>>
  func.return %y : tensor<1x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [1]>>
}
