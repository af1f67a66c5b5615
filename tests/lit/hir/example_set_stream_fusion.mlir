// examples/set_stream.mlir (the fusion-level program the section 4 lowering starts from)
// round-trips unchanged in the custom and the generic form.
// RUN: hir-opt %S/../../../examples/set_stream.mlir > %t.custom.mlir
// RUN: hir-opt %t.custom.mlir > %t.custom2.mlir
// RUN: diff %t.custom.mlir %t.custom2.mlir
// RUN: hir-opt %S/../../../examples/set_stream.mlir --print-op-generic | hir-opt > %t.from_generic.mlir
// RUN: diff %t.custom.mlir %t.from_generic.mlir
// RUN: filecheck %s --input-file %t.custom.mlir

// CHECK-LABEL: func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
// CHECK-NEXT:    %0 = fusion.set %arg0 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
// CHECK-NEXT:    func.return %0 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
// CHECK-NEXT:  }
