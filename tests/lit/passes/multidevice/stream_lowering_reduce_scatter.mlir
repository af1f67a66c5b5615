// RUN: hir-opt %S/../../../../examples/multidevice/reduce_scatter.mlir --stream-lowering | filecheck %s

// A plain reduce-scatter (examples/multidevice/reduce_scatter.mlir): this device's partial is its
// input without the didx axis (a view, 2x8x16); the reduce-scatter leaves this device's part
// (1x8x16) in the output. No local copy.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: memref<1x2x8x16xf32> {fusion.type = tensor<2x2x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>})
// CHECK-SAME:    -> (memref<1x8x16xf32> {fusion.type = tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>})
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = hir.allocate() : memref<1x8x16xf32>
// CHECK-NEXT:    %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[PARTIAL:[a-z0-9_]+]] = hir.alias_select %[[X]][%[[C0]]] axis 0 : memref<1x2x8x16xf32> -> memref<2x8x16xf32, strided<[128, 16, 1], offset: ?>>
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = hir.reduce_scatter sum %[[PARTIAL]] into %[[Y]] axis 0 mesh = [0, 1] : memref<2x8x16xf32, strided<[128, 16, 1], offset: ?>>, memref<1x8x16xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return %[[Y]] : memref<1x8x16xf32>
// CHECK-NEXT:  }
