// The all-gather + GEMM with the loop over the devices' shards, on one device: one iteration,
// on the device's own shard.
func.func @main(%a: tensor<1x16x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>,
                %b: tensor<32x24xf32>)
    -> tensor<1x16x24xf32, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<1x16x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0]>>, tensor<32x24xf32> -> tensor<1x16x24xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<1x16x24xf32, #fusion.parallel<[stream, serial, serial]>>
}
