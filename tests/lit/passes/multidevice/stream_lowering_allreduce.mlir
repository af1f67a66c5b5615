// RUN: hir-opt %S/../../../../examples/multidevice/allreduce.mlir --stream-lowering | filecheck %s

// A plain all-reduce (examples/multidevice/allreduce.mlir): a sum over the sharded axis is a local
// partial sum of this device's shard into the output, then an in-place all-reduce of the output.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: memref<1x8x16xf32> {fusion.type = tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>})
// CHECK-SAME:    -> (memref<8x16xf32> {fusion.type = tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>})
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = hir.allocate() : memref<8x16xf32>
// CHECK-NEXT:    hir.launch ins(%[[L:[a-z0-9_]+]] = %[[X]] : memref<1x8x16xf32>) outs(%[[Y]] : memref<8x16xf32>) {
// CHECK-NEXT:      %[[P:[a-z0-9_]+]] = fusion.sum %[[L]] dims = [0] : tensor<1x8x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT:      hir.yield %[[P]] : tensor<8x16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = hir.allreduce sum %[[Y]] into %[[Y]] mesh = [0, 1] : memref<8x16xf32>, memref<8x16xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return %[[Y]] : memref<8x16xf32>
// CHECK-NEXT:  }
