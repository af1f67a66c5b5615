// RUN: hir-opt %s --split-input-file -p fusion-decompose-resharding | filecheck %s
// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s --check-prefix=LOWERED

// An extent-1 operand axis feeding the result's didx axis is a broadcast: every result index reads
// its one index, so the operand holds it whole (replicated). Sharded, that one index would be the
// first device's alone (chunks of ceil(1/D)) and the other devices would compute on an empty shard.

// GEMM + reduce-scatter by send/recv: the matmul moves the sharded axis (K shards -> the stream
// axis, A's stream axis and B's broadcast axis -> the didx axis). B is gathered one K shard per
// iteration into a replicated value: no didx shard of its extent-1 axis.
// CHECK-LABEL: func.func @reduce_scatter_send_recv(
// CHECK:         %[[BB:[a-z0-9_]+]] = fusion.broadcast
// CHECK-NEXT:    %[[AG:[a-z0-9_]+]] = fusion.set %{{.*}} -> tensor<2x2x8x16xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %[[BG:[a-z0-9_]+]] = fusion.set %[[BB]] : tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x1x16x4xf32, #fusion.parallel<[stream, serial, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.matmul %[[AG]], %[[BG]] :
// LOWERED-LABEL: func.func @reduce_scatter_send_recv(
// LOWERED-NOT:     shard_extent
// LOWERED:         %bb_gathered = hir.allocate(%slots) : memref<?x1x16x4xf32>
// LOWERED:         hir.for %i_1 =
// LOWERED:           %bb_i = hir.alias_select %bb[%c0] axis 0 : memref<1x1x16x4xf32> -> memref<1x16x4xf32, strided<[64, 4, 1], offset: ?>>
// LOWERED-NEXT:      %bb_gathered_i = hir.alias_select %bb_gathered[%k_1] axis 0 : memref<?x1x16x4xf32> -> memref<1x16x4xf32, strided<[64, 4, 1], offset: ?>>
// LOWERED-NEXT:      %[[B:[0-9]+]] = hir.broadcast %bb_i into %bb_gathered_i root %i_1 mesh = [0, 1] :
// LOWERED-NEXT:      hir.wait %[[B]]
// LOWERED-NEXT:      %cu_i = hir.alias_select %cu[%i_1] axis 0
// LOWERED-NEXT:      hir.launch ins(%a_gathered_1 = %a_gathered_i, %bb_gathered_1 = %bb_gathered_i : {{.*}}) outs(%cu_i : {{.*}}) {
// LOWERED-NEXT:        fusion.matmul %a_gathered_1, %bb_gathered_1 : tensor<1x8x16xf32>, tensor<1x16x4xf32> -> tensor<1x8x4xf32>
func.func @reduce_scatter_send_recv(%a: tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>, %b: tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %bb = fusion.broadcast %b dims = [1] : tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>
  %cu = fusion.matmul %a, %bb : tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>, tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %cu dims = [0] : tensor<2x2x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}

// -----

// An operand already sharded that way (one index over 2 devices, device 1 holding none) is gathered
// (padded to one index per device, all-gathered, the first index kept) before the batched matmul.
// CHECK-LABEL: func.func @sharded_one_index(
// CHECK-NEXT:    %[[XG:[a-z0-9_]+]] = fusion.set %x : tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<1x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.matmul %[[XG]], %y :
// LOWERED-LABEL: func.func @sharded_one_index(
// LOWERED:         %x_gathered = hir.allocate() : memref<1x8x16xf32>
// LOWERED:         %[[G:[0-9]+]] = hir.allgather %padded into %gathered axis 0 mesh = [0, 1] : memref<1x8x16xf32>, memref<2x8x16xf32>
// LOWERED-NEXT:    hir.wait %[[G]]
// LOWERED-NEXT:    hir.launch ins(%gathered_1 = %gathered : memref<2x8x16xf32>) outs(%x_gathered : memref<1x8x16xf32>) {
// LOWERED-NEXT:      fusion.slice %gathered_1 offsets = [0, 0, 0] strides = [1, 1, 1] : tensor<2x8x16xf32> -> tensor<1x8x16xf32>
// LOWERED:         hir.launch ins(%x_gathered_1 = %x_gathered, %y_1 = %y : memref<1x8x16xf32>, memref<1x16x4xf32>) outs(%z : memref<1x8x4xf32>) {
// LOWERED-NEXT:      fusion.matmul %x_gathered_1, %y_1 : tensor<1x8x16xf32>, tensor<1x16x4xf32> -> tensor<1x8x4xf32>
func.func @sharded_one_index(%x: tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %y: tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %z = fusion.matmul %x, %y : tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %z : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}

// -----

// A replicated extent-1 operand is broadcast on every device as it is: no set, one local launch.
// CHECK-LABEL: func.func @replicated_broadcast(
// CHECK-NEXT:    fusion.matmul %x, %y :
// LOWERED-LABEL: func.func @replicated_broadcast(
// LOWERED-NEXT:    %z = hir.allocate() : memref<1x8x4xf32>
// LOWERED-NEXT:    hir.launch ins(%x_1 = %x, %y_1 = %y : memref<1x8x16xf32>, memref<1x16x4xf32>) outs(%z : memref<1x8x4xf32>) {
func.func @replicated_broadcast(%x: tensor<1x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>, %y: tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %z = fusion.matmul %x, %y : tensor<1x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>, tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %z : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}

// -----

// Not a broadcast: the result's didx axis has that one index too (device 0's alone), so the
// replicated operand is sliced the same way (a scatter: device 1 takes an empty chunk).
// CHECK-LABEL: func.func @one_index_result(
// CHECK-NEXT:    %[[XS:[a-z0-9_]+]] = fusion.set %x : tensor<1x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>> -> tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.matmul %[[XS]], %y :
// LOWERED-LABEL: func.func @one_index_result(
// LOWERED:         %x_gathered = hir.allocate(%shard_extent) : memref<?x8x16xf32>
// LOWERED-NEXT:    %mine = hir.alias_chunk %x[%me] axis 0 chunks 2 : memref<1x8x16xf32> -> memref<?x8x16xf32, strided<[128, 16, 1], offset: ?>>
func.func @one_index_result(%x: tensor<1x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>, %y: tensor<1x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<1x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %z = fusion.matmul %x, %y : tensor<1x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>, tensor<1x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<1x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %z : tensor<1x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}
