// RUN: hir-opt %S/../../../../examples/multidevice/allgather.mlir --stream-lowering | filecheck %s

// A plain all-gather (examples/multidevice/allgather.mlir), no stream axis: the argument is this
// device's shard (didx axis of extent 1), the result the whole tensor; no loop, no stream switch.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: memref<1x8x16xf32> {fusion.type = tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>})
// CHECK-SAME:    -> (memref<2x8x16xf32> {fusion.type = tensor<2x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>})
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = hir.allocate() : memref<2x8x16xf32>
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = hir.allgather %[[X]] into %[[Y]] axis 0 mesh = [0, 1] : memref<1x8x16xf32>, memref<2x8x16xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return %[[Y]] : memref<2x8x16xf32>
// CHECK-NEXT:  }
