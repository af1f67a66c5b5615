// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// A loop over the devices' shards (didx axis -> the loop's stream axis) whose result is sharded
// on another axis: iteration i broadcasts device i's shard into a temporary, and each device
// keeps its slice of it (an all-to-all done by the loop).

// CHECK-LABEL: func.func @shard_loop_to_other_didx
// CHECK:         hir.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK:         hir.for %[[J:.*]] = %c0 to %c2 step %c1 {
// CHECK:           %x_i = hir.alias_select %x[%c0] axis 0 : memref<1x2x3xf32> -> memref<2x3xf32, strided<[3, 1], offset: ?>>
// CHECK-NEXT:      %[[T:.*]] = hir.alias_select %x_gathered[%{{k_[0-9]+}}] axis 0 : memref<?x1x3xf32> -> memref<1x3xf32, strided<[3, 1], offset: ?>>
// CHECK-NEXT:      %received = hir.allocate() : memref<2x3xf32>
// CHECK-NEXT:      %[[W:.*]] = hir.broadcast %x_i into %received root %[[J]] mesh = [0, 1]
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      %me = hir.device_index mesh = [0, 1] outside 0
// CHECK-NEXT:      %mine = hir.alias_chunk %received[%me] axis 0 chunks 2 : memref<2x3xf32> -> memref<1x3xf32, strided<[3, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%{{.*}} = %mine : {{.*}}) outs(%[[T]] : {{.*}})
// CHECK:           fusion.relu

func.func @shard_loop_to_other_didx(%x: tensor<2x2x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x3xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>> {
  %y = fusion.relu %x : tensor<2x2x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x3xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x2x3xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
}
