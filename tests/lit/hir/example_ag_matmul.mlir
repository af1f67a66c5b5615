// examples/ag_matmul.mlir (the all-gather + GEMM program of DESIGN.md section 4) round-trips
// unchanged in the custom and the generic form.
// RUN: hir-opt %S/../../../examples/ag_matmul.mlir > %t.custom.mlir
// RUN: hir-opt %t.custom.mlir > %t.custom2.mlir
// RUN: diff %t.custom.mlir %t.custom2.mlir
// RUN: hir-opt %S/../../../examples/ag_matmul.mlir --print-op-generic > %t.generic.mlir
// RUN: hir-opt %t.generic.mlir > %t.from_generic.mlir
// RUN: diff %t.custom.mlir %t.from_generic.mlir
// RUN: hir-opt %t.custom.mlir --print-op-generic > %t.generic2.mlir
// RUN: diff %t.generic.mlir %t.generic2.mlir
// RUN: filecheck %s --input-file %t.custom.mlir

// CHECK-LABEL: func.func @main(%a: tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<256x128xf32>) -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
// CHECK-NEXT:    %c = fusion.matmul %a, %b : tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<256x128xf32> -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
// CHECK-NEXT:    func.return %c : tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
// CHECK-NEXT:  }
