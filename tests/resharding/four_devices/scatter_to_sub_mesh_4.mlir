// Replicated on [0, 1, 2, 3] -> sharded on [1, 2]: devices 1 and 2 copy their slices; devices 0
// and 3, outside the result's mesh, run the copy too (hir.device_index ... outside 0). Then back
// to every device: an all-gather on [1, 2] and a broadcast from device 1.
func.func @main(%x: tensor<5x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>) -> tensor<5x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>> {
  %y = fusion.set %x : tensor<5x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<5x2xf32, #fusion.parallel<[serial, didx], mesh = [1, 2]>>
  %n = fusion.neg %y : tensor<5x2xf32, #fusion.parallel<[serial, didx], mesh = [1, 2]>> -> tensor<5x2xf32, #fusion.parallel<[serial, didx], mesh = [1, 2]>>
  %z = fusion.set %n : tensor<5x2xf32, #fusion.parallel<[serial, didx], mesh = [1, 2]>> -> tensor<5x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %z : tensor<5x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
}
