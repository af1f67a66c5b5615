// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// didx axis A -> didx axis B on one mesh (an all-to-all): an all-gather along A into a temporary
// whose axis B is still whole, then this device's slice along B. Mesh-size times the traffic of
// a real all-to-all, but only the all-gather is needed.

// CHECK-LABEL: func.func @all_to_all
// CHECK:         %all_gathered = hir.allocate() : memref<2x2x16xf32>
// CHECK-NEXT:    %[[W:.*]] = hir.allgather %x into %all_gathered axis 0 mesh = [0, 1] : memref<1x2x16xf32>, memref<2x2x16xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    %me = hir.device_index mesh = [0, 1] outside 0
// CHECK-NEXT:    %mine = hir.alias_chunk %all_gathered[%me] axis 1 chunks 2 : memref<2x2x16xf32> -> memref<2x1x16xf32, strided<[32, 16, 1], offset: ?>>
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %mine : {{.*}}) outs(%y : memref<2x1x16xf32>)
func.func @all_to_all(%x: tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}


// -----

// In a stream loop (axis 0 is the stream axis, so the chunk's axes 0 -> 1).
// CHECK-LABEL: func.func @all_to_all_in_loop
// CHECK:           %all_gathered = hir.allocate() : memref<2x2x16xf32>
// CHECK-NEXT:      hir.allgather %x_i into %all_gathered axis 0 mesh = [0, 1]
// CHECK:           %mine = hir.alias_chunk %all_gathered[%me] axis 1 chunks 2
func.func @all_to_all_in_loop(%x: tensor<4x2x2x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>) -> tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<4x2x2x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> -> tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>>
}


// -----

// A max over the didx axis whose result is sharded on another axis: fusion-decompose-resharding's
// set before the max is an all-to-all.
// CHECK-LABEL: func.func @max_into_other_didx
// CHECK:         hir.allgather %x into %all_gathered axis 0 mesh = [0, 1]
// CHECK:         %mine = hir.alias_chunk %all_gathered[%me] axis 1 chunks 2
// CHECK:           fusion.max
func.func @max_into_other_didx(%x: tensor<2x2x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %m = fusion.max %x dims = [0] : tensor<2x2x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %m : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
