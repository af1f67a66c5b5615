// GEMM + reduce-scatter on the mesh [3, 1, 0, 2] (device 3 holds K block 0 and row block 0 of the
// sum): the process group ranks the devices 0..3; the reduce-scatter puts the pieces in mesh order.
func.func @main(%a: tensor<2x4x4x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [3, 1, 0, 2]>>,
                %b: tensor<1x4x1x16x12xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [3, 1, 0, 2]>>)
    -> tensor<2x4x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [3, 1, 0, 2]>> {
  %p = fusion.matmul %a, %b : tensor<2x4x4x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [3, 1, 0, 2]>>, tensor<1x4x1x16x12xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [3, 1, 0, 2]>> -> tensor<2x4x4x8x12xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [3, 1, 0, 2]>>
  %c = fusion.sum %p dims = [1] : tensor<2x4x4x8x12xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [3, 1, 0, 2]>> -> tensor<2x4x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [3, 1, 0, 2]>>
  func.return %c : tensor<2x4x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [3, 1, 0, 2]>>
}
