// GEMM + reduce-scatter on the mesh [1, 0]: device 1 holds K block 0 and row block 0 of the sum, device 0
// the others. The process group ranks its devices 0, 1; the collectives put the pieces in mesh order.
func.func @main(%a: tensor<4x2x2x16x64xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [1, 0]>>,
                %b: tensor<1x2x1x64x48xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [1, 0]>>)
    -> tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [1, 0]>> {
  %p = fusion.matmul %a, %b : tensor<4x2x2x16x64xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [1, 0]>>, tensor<1x2x1x64x48xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [1, 0]>> -> tensor<4x2x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [1, 0]>>
  %c = fusion.sum %p dims = [1] : tensor<4x2x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [1, 0]>> -> tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [1, 0]>>
  func.return %c : tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [1, 0]>>
}
