// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// Gathers, scatters and copies between meshes (passes/resharding/set_lowering.py): each device
// of the result either holds the data already (a local copy, or a local slice at its
// hir.device_index) or gets it by an all-gather or a broadcast over both meshes.

// The gather to one device in the two sets the one-change rule asks for: the all-gather, then
// replicated on [0, 1] -> [0], which moves nothing (every device of [0] holds the data): a local copy.
// CHECK-LABEL: func.func @gather_two_steps
// CHECK:         %[[G:.*]] = hir.allocate() : memref<2x16xf32>
// CHECK-NEXT:    %[[W:.*]] = hir.allgather %x into %[[G]] axis 0 mesh = [0, 1] : memref<1x16xf32>, memref<2x16xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    %[[Y:.*]] = hir.allocate() : memref<2x16xf32>
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %[[G]] : memref<2x16xf32>) outs(%[[Y]] : memref<2x16xf32>) {
// CHECK-NEXT:      fusion.set %{{.*}} : tensor<2x16xf32> -> tensor<2x16xf32>
// CHECK-NOT:     hir.broadcast

// A gather to device 0 in the two steps the one-change rule asks for: an all-gather on the mesh,
// then replicated on [0, 1] -> [0], which moves nothing (a local copy on the devices of [0]).
func.func @gather_two_steps(%x: tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>> {
  %g = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %y = fusion.set %g : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0]>>
}

// -----

// The same in one set: an all-gather on the source mesh (its devices include the result's).
// CHECK-LABEL: func.func @gather_one_set
// CHECK:         %[[W:.*]] = hir.allgather %x into %y axis 0 mesh = [0, 1] : memref<1x16xf32>, memref<2x16xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return %y

// The same gather in one set (sharded on [0, 1] -> replicated on [1]): an all-gather on [0, 1].
func.func @gather_one_set(%x: tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>> {
  %y = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
}

// -----

// Replicated on [1] -> sharded on [0, 1]: a broadcast from device 1 (position 1 of [0, 1]) into a
// temporary, then each device's slice.
// CHECK-LABEL: func.func @scatter_from_one_device
// CHECK:         %received = hir.allocate() : memref<8x2xf32>
// CHECK-NEXT:    %root = arith.constant 1 : index
// CHECK-NEXT:    %[[W:.*]] = hir.broadcast %x into %received root %root mesh = [0, 1] : memref<8x2xf32>, memref<8x2xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    %me = hir.device_index mesh = [0, 1] outside 0
// CHECK-NEXT:    %mine = hir.alias_chunk %received[%me] axis 1 chunks 2 : memref<8x2xf32> -> memref<8x1xf32, strided<[2, 1], offset: ?>>
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %mine : {{.*}}) outs(%y : memref<8x1xf32>)

// A scatter from device 1 to the mesh [0, 1]: a broadcast from device 1, then each device's slice.
func.func @scatter_from_one_device(%x: tensor<8x2xf32, #fusion.parallel<[serial, serial], mesh = [1]>>) -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<8x2xf32, #fusion.parallel<[serial, serial], mesh = [1]>> -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  %z = fusion.neg %y : tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %z : tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}

// -----

// Replicated on [0] -> replicated on [1] (disjoint meshes): a broadcast over [0, 1] from device 0.
// CHECK-LABEL: func.func @copy_between_meshes
// CHECK:         %root = arith.constant 0 : index
// CHECK:         %[[W:.*]] = hir.broadcast %x into %y root %root mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
// CHECK-NEXT:    hir.wait %[[W]]

// Replicated on [0] -> replicated on [1] (disjoint meshes): a broadcast over [0, 1] from device 0.
func.func @copy_between_meshes(%x: tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0]>>) -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [1]>> {
  %y = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0]>> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
}

// -----

// Replicated -> sharded on the same mesh: no communication, each device copies its slice.
// CHECK-LABEL: func.func @scatter
// CHECK:         %y = hir.allocate() : memref<1x16xf32>
// CHECK-NEXT:    %me = hir.device_index mesh = [0, 1] outside 0
// CHECK-NEXT:    %mine = hir.alias_chunk %x[%me] axis 0 chunks 2 : memref<2x16xf32> -> memref<1x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:    hir.launch ins(%[[M:.*]] = %mine : memref<1x16xf32, strided<[16, 1], offset: ?>>) outs(%y : memref<1x16xf32>) {
// CHECK-NEXT:      fusion.set %[[M]] : tensor<1x16xf32> -> tensor<1x16xf32>
// CHECK-NOT:     hir.wait

// Replicated -> sharded on the same mesh: each device copies its own slice, no communication.
func.func @scatter(%x: tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// -----

// In a stream loop (fusion-decompose-resharding's set before the relu): the slice of chunk i.
// CHECK-LABEL: func.func @relu_scatter_in_loop
// CHECK:         hir.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK:         hir.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK:           %x_i = hir.alias_select %x[%[[J]]] axis 0 : memref<4x2x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:      %[[T:.*]] = hir.alias_select %x_gathered[%{{k_[0-9]+}}] axis 0 : memref<?x1x8xf32>
// CHECK-NEXT:      %me = hir.device_index mesh = [0, 1] outside 0
// CHECK-NEXT:      %mine = hir.alias_chunk %x_i[%me] axis 0 chunks 2
// CHECK-NEXT:      hir.launch ins(%{{.*}} = %mine : {{.*}}) outs(%[[T]] : {{.*}})
// CHECK:           fusion.relu

// A computing op whose result is sharded on an inner axis and streamed on axis 0: the operand's
// slice of each chunk is taken locally, then the relu runs on it.
func.func @relu_scatter_in_loop(%x: tensor<4x2x8xf32>) -> tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>> {
  %y = fusion.relu %x : tensor<4x2x8xf32> -> tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
}
