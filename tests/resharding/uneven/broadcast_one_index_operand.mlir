// One index over 2 devices (device 1 holds none) broadcast along the didx axis of a batched matmul
// whose result has one index per device: every device reads that one index, so it is gathered
// first (padded to one index per device, all-gathered, the first one kept), never multiplied as
// device 1's empty shard.
func.func @main(%x: tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>,
                %y: tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %z = fusion.matmul %x, %y : tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %z : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}
