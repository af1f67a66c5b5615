// examples/set_stream.hir.mlir (the hand-written lowering of DESIGN.md section 4) round-trips
// unchanged: printing is a fixpoint in the custom form, and the generic form parses back to it.
// RUN: hir-opt %S/../../../examples/set_stream.hir.mlir > %t.custom.mlir
// RUN: hir-opt %t.custom.mlir > %t.custom2.mlir
// RUN: diff %t.custom.mlir %t.custom2.mlir
// RUN: hir-opt %S/../../../examples/set_stream.hir.mlir --print-op-generic > %t.generic.mlir
// RUN: hir-opt %t.generic.mlir > %t.from_generic.mlir
// RUN: diff %t.custom.mlir %t.from_generic.mlir
// RUN: hir-opt %t.custom.mlir --print-op-generic > %t.generic2.mlir
// RUN: diff %t.generic.mlir %t.generic2.mlir
// RUN: filecheck %s --input-file %t.custom.mlir

// The second loop's %i becomes %i_1 (names are unique per function once printed).
// CHECK-LABEL: func.func @main(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %buf = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %main = hir.get_current_stream
// CHECK-NEXT:    %n = hir.num_streams
// CHECK-NEXT:    hir.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %k = arith.remui %i, %n : index
// CHECK-NEXT:      %s = hir.stream %k
// CHECK-NEXT:      hir.set_current_stream %s
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for %i_1 = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %k_1 = arith.remui %i_1, %n : index
// CHECK-NEXT:      %s_1 = hir.stream %k_1
// CHECK-NEXT:      hir.set_current_stream %s_1
// CHECK-NEXT:      %in_i = hir.alias_select %arg0[%i_1] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %out_i = hir.alias_select %buf[%i_1] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%x = %in_i : memref<8xf32, strided<[1], offset: ?>>) outs(%out_i : memref<8xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        %y = fusion.set %x : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:        hir.yield %y : tensor<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize %s_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %buf : memref<4x8xf32>
// CHECK-NEXT:  }
