// Replicated -> sharded on a mesh of one device (a scatter: the device keeps its slice, all of
// it), then gathered again along the sharded axis by a loop over the shards.
func.func @main(%x: tensor<1x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>>)
    -> (tensor<1x16xf32, #fusion.parallel<[didx, serial], mesh = [0]>>, tensor<1x16xf32, #fusion.parallel<[stream, serial], mesh = [0]>>) {
  %y = fusion.set %x : tensor<1x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>> -> tensor<1x16xf32, #fusion.parallel<[didx, serial], mesh = [0]>>
  %z = fusion.exp %y : tensor<1x16xf32, #fusion.parallel<[didx, serial], mesh = [0]>> -> tensor<1x16xf32, #fusion.parallel<[stream, serial], mesh = [0]>>
  func.return %y, %z : tensor<1x16xf32, #fusion.parallel<[didx, serial], mesh = [0]>>, tensor<1x16xf32, #fusion.parallel<[stream, serial], mesh = [0]>>
}
