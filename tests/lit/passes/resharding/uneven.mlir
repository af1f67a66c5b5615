// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// Uneven didx axes (extent L over D devices, chunks of c = ceil(L/D), trailing devices fewer):
// the local extent is `?` unless D divides L, this device's extent is computed at the top from
// its mesh position, and the collectives work on equal pieces padded to c
// (passes/resharding/set_lowering.py, passes/lower_communication.py).

// Local compute keeps the shard's extent (the chunk rule at the device's position); the all-gather
// of 5 rows over 2 pads each shard to 3 (device 0 copies its 3 rows, device 1 appends a zero row
// to its 2), gathers 6 rows and keeps the first 5.
// CHECK-LABEL: func.func @allgather_5_over_2
// CHECK-SAME:    (%x: memref<?x8xf32> {fusion.type = tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>})
// CHECK:         %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[C5:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[ME:.*]] = hir.device_index mesh = [0, 1] outside 0
// CHECK-NEXT:    %[[START:.*]] = arith.muli %[[ME]], %[[C3]] : index
// CHECK-NEXT:    %[[CLAMPED:.*]] = arith.minui %[[START]], %[[C5]] : index
// CHECK-NEXT:    %[[REST:.*]] = arith.subi %[[C5]], %[[CLAMPED]] : index
// CHECK-NEXT:    %shard_extent = arith.minui %[[REST]], %[[C3]] : index
// CHECK-NEXT:    %y = hir.allocate(%shard_extent) : memref<?x8xf32>
// CHECK:           fusion.relu %{{.*}} : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK:         %z = hir.allocate() : memref<5x8xf32>
// CHECK-NEXT:    %padded = hir.allocate() : memref<3x8xf32>
// CHECK:         %[[FULL:.*]] = arith.cmpi ult, %[[ME]], %[[C1:.*]] : index
// CHECK-NEXT:    scf.if %[[FULL]] {
// CHECK-NEXT:      hir.launch ins(%{{.*}} = %y : memref<?x8xf32>) outs(%padded : memref<3x8xf32>) {
// CHECK-NEXT:        fusion.set %{{.*}} : tensor<?x8xf32> -> tensor<3x8xf32>
// CHECK:         %[[PARTIAL:.*]] = arith.cmpi eq, %[[ME]], %[[C1]] : index
// CHECK-NEXT:    scf.if %[[PARTIAL]] {
// CHECK-NEXT:      hir.launch ins(%[[Y:.*]] = %y : memref<?x8xf32>) outs(%padded : memref<3x8xf32>) {
// CHECK-NEXT:        %[[ZERO:.*]] = fusion.full 0.000000e+00 : tensor<1x8xf32>
// CHECK-NEXT:        %[[CAT:.*]] = fusion.concat %[[Y]], %[[ZERO]] dim = 0 : tensor<?x8xf32>, tensor<1x8xf32> -> tensor<3x8xf32>
// CHECK-NEXT:        hir.yield %[[CAT]] : tensor<3x8xf32>
// CHECK:         %gathered = hir.allocate() : memref<6x8xf32>
// CHECK-NEXT:    %[[W:.*]] = hir.allgather %padded into %gathered axis 0 mesh = [0, 1] : memref<3x8xf32>, memref<6x8xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %gathered : memref<6x8xf32>) outs(%z : memref<5x8xf32>) {
// CHECK-NEXT:      fusion.slice %{{.*}} offsets = [0, 0] strides = [1, 1] : tensor<6x8xf32> -> tensor<5x8xf32>
func.func @allgather_5_over_2(%x: tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<5x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %y = fusion.relu %x : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %z = fusion.set %y : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %z : tensor<5x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}

// -----

// The uneven axis inside: the padded shard and the gathered temporary have it first, a permute
// into the padding and the slice permuted back.
// CHECK-LABEL: func.func @allgather_inner_7_over_4
// CHECK:         %padded = hir.allocate() : memref<2x4x6xf32>
// CHECK:           fusion.permute %{{.*}} perm = [1, 0, 2] : tensor<4x?x6xf32> -> tensor<2x4x6xf32>
// CHECK:           %[[P:.*]] = fusion.permute %{{.*}} perm = [1, 0, 2] : tensor<4x?x6xf32> -> tensor<?x4x6xf32>
// CHECK-NEXT:      %[[ZERO:.*]] = fusion.full 0.000000e+00 : tensor<1x4x6xf32>
// CHECK-NEXT:      fusion.concat %[[P]], %[[ZERO]] dim = 0 : tensor<?x4x6xf32>, tensor<1x4x6xf32> -> tensor<2x4x6xf32>
// CHECK:         %gathered = hir.allocate() : memref<8x4x6xf32>
// CHECK-NEXT:    hir.allgather %padded into %gathered axis 0 mesh = [0, 1, 2, 3] : memref<2x4x6xf32>, memref<8x4x6xf32>
// CHECK:           %[[S:.*]] = fusion.slice %{{.*}} offsets = [0, 0, 0] strides = [1, 1, 1] : tensor<8x4x6xf32> -> tensor<7x4x6xf32>
// CHECK-NEXT:      fusion.permute %[[S]] perm = [1, 0, 2] : tensor<7x4x6xf32> -> tensor<4x7x6xf32>
func.func @allgather_inner_7_over_4(%x: tensor<4x7x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2, 3]>>) -> tensor<4x7x6xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1, 2, 3]>> {
  %y = fusion.set %x : tensor<4x7x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x7x6xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<4x7x6xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1, 2, 3]>>
}

// -----

// A multiple of the mesh size other than it (8 over 4): 2 indices each, static, no padding.
// CHECK-LABEL: func.func @allgather_8_over_4
// CHECK-SAME:    (%x: memref<2x3xf32>
// CHECK:         %[[W:.*]] = hir.allgather %x into %y axis 0 mesh = [0, 1, 2, 3] : memref<2x3xf32>, memref<8x3xf32>
// CHECK-NOT:     %padded
func.func @allgather_8_over_4(%x: tensor<8x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>) -> tensor<8x3xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>> {
  %y = fusion.set %x : tensor<8x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<8x3xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<8x3xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
}

// -----

// The scatter onto 3 columns over 4 (1, 1, 1 and none): no communication, this device's chunk
// of ceil(3/4) = 1 columns (hir.alias_chunk clamps the last to none) into a buffer of its extent.
// CHECK-LABEL: func.func @scatter_3_over_4
// CHECK:         %[[ME:.*]] = hir.device_index mesh = [0, 1, 2, 3] outside 0
// CHECK:         %shard_extent = arith.minui %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %y = hir.allocate(%shard_extent) : memref<5x?xf32>
// CHECK-NEXT:    %mine = hir.alias_chunk %x[%[[ME]]] axis 1 chunks 4 : memref<5x3xf32> -> memref<5x?xf32, strided<[3, 1], offset: ?>>
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %mine : memref<5x?xf32, strided<[3, 1], offset: ?>>) outs(%y : memref<5x?xf32>) {
// CHECK-NOT:     hir.allgather
func.func @scatter_3_over_4(%x: tensor<5x3xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>) -> tensor<5x3xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> {
  %y = fusion.set %x : tensor<5x3xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<5x3xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<5x3xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
}

// -----

// A sum over the uneven didx axis: the local sum over this device's rows, then the all-reduce.
// CHECK-LABEL: func.func @sum_over_5_over_2
// CHECK:         hir.launch ins(%{{.*}} = %x : memref<?x4xf32>) outs(%y : memref<4xf32>) {
// CHECK-NEXT:      fusion.sum %{{.*}} dims = [0] : tensor<?x4xf32> -> tensor<4xf32>
// CHECK:         %[[W:.*]] = hir.allreduce sum %y into %y mesh = [0, 1] : memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    hir.wait %[[W]]
func.func @sum_over_5_over_2(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  func.return %y : tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
}

// -----

// A sum onto 5 rows over 2: the local sum padded with a zero row to 6, reduce-scattered in
// blocks of 3, device 0 keeping its 3 rows and device 1 the first 2 of its block.
// CHECK-LABEL: func.func @reduce_scatter_onto_5_over_2
// CHECK:         %y = hir.allocate(%shard_extent) : memref<?x8xf32>
// CHECK-NEXT:    %partial = hir.allocate() : memref<6x8xf32>
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %x : memref<1x5x8xf32>) outs(%partial : memref<6x8xf32>) {
// CHECK-NEXT:      %[[SUM:.*]] = fusion.sum %{{.*}} dims = [0] : tensor<1x5x8xf32> -> tensor<5x8xf32>
// CHECK-NEXT:      %[[ZERO:.*]] = fusion.full 0.000000e+00 : tensor<1x8xf32>
// CHECK-NEXT:      %[[CAT:.*]] = fusion.concat %[[SUM]], %[[ZERO]] dim = 0 : tensor<5x8xf32>, tensor<1x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT:      hir.yield %[[CAT]] : tensor<6x8xf32>
// CHECK:         %piece = hir.allocate() : memref<3x8xf32>
// CHECK-NEXT:    %[[W:.*]] = hir.reduce_scatter sum %partial into %piece axis 0 mesh = [0, 1] : memref<6x8xf32>, memref<3x8xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK:         arith.cmpi ult
// CHECK-NEXT:    scf.if
// CHECK-NEXT:      hir.launch ins(%{{.*}} = %piece : memref<3x8xf32>) outs(%y : memref<?x8xf32>) {
// CHECK-NEXT:        fusion.set %{{.*}} : tensor<3x8xf32> -> tensor<?x8xf32>
// CHECK:         arith.cmpi eq
// CHECK-NEXT:    scf.if
// CHECK-NEXT:      hir.launch ins(%{{.*}} = %piece : memref<3x8xf32>) outs(%y : memref<?x8xf32>) {
// CHECK-NEXT:        %[[CUT:.*]] = fusion.slice %{{.*}} offsets = [0, 0] strides = [1, 1] : tensor<3x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:        fusion.set %[[CUT]] : tensor<2x8xf32> -> tensor<?x8xf32>
func.func @reduce_scatter_onto_5_over_2(%x: tensor<2x5x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<2x5x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
