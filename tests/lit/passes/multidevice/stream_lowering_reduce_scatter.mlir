// RUN: hir-opt %S/../../../../examples/multidevice/reduce_scatter.mlir --stream-lowering | filecheck %s

// A plain reduce-scatter (examples/multidevice/reduce_scatter.mlir): the local partial sum goes
// into a temporary with the destination's didx axis at full extent (2x8x16); the reduce-scatter
// leaves this device's part (1x8x16) in the output.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: memref<1x2x8x16xf32> {fusion.type = tensor<2x2x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>})
// CHECK-SAME:    -> (memref<1x8x16xf32> {fusion.type = tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>})
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = hir.allocate() : memref<1x8x16xf32>
// CHECK-NEXT:    %[[PARTIAL:[a-z0-9_]+]] = hir.allocate() : memref<2x8x16xf32>
// CHECK-NEXT:    hir.launch ins(%[[L:[a-z0-9_]+]] = %[[X]] : memref<1x2x8x16xf32>) outs(%[[PARTIAL]] : memref<2x8x16xf32>) {
// CHECK-NEXT:      %[[P:[a-z0-9_]+]] = fusion.sum %[[L]] dims = [0] : tensor<1x2x8x16xf32> -> tensor<2x8x16xf32>
// CHECK-NEXT:      hir.yield %[[P]] : tensor<2x8x16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = hir.reduce_scatter sum %[[PARTIAL]] into %[[Y]] axis 0 mesh = [0, 1] : memref<2x8x16xf32>, memref<1x8x16xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return %[[Y]] : memref<1x8x16xf32>
// CHECK-NEXT:  }
