// All-gather after the GEMM (nvFuser's AGMatmulTest.CollectiveBasedPipeline/AG_after_Matmul): the
// matmul runs on the device's rows of chunk i, then a set gathers its result; both stream-parallel
// on the chunks, so each iteration multiplies, then all-gathers the product.
func.func @main(%a: tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<16x24xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> tensor<4x2x8x24xf32, #fusion.parallel<[stream, serial, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<16x24xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<4x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %c = fusion.set %p : tensor<4x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<4x2x8x24xf32, #fusion.parallel<[stream, serial, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<4x2x8x24xf32, #fusion.parallel<[stream, serial, serial, serial], mesh = [0, 1]>>
}
