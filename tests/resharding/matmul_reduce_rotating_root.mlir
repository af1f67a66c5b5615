// Reduce-based GEMM + reduce-scatter (nvFuser's RSMatmulTest.ReduceScatterReduceBased): K sharded
// over D=2, the stream axis of the partials is the result's didx axis; iteration i reduces chunk i
// to device i (hir.reduce root %i) inside the GEMM loop.
func.func @main(%a: tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>,
                %b: tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %cu = fusion.matmul %a, %b : tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>, tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x4xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %cu dims = [0] : tensor<2x2x8x4xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}
