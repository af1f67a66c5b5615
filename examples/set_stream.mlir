// One stream-parallel copy: axis 0 of the result is iterated by a host loop over streams.
// Lower and run it:  hir-opt --stream-lowering examples/set_stream.mlir
//                    hir-run examples/set_stream.mlir --check
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %0 = fusion.set %arg0 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %0 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
