// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine}' | filecheck %s --check-prefix=CE
// RUN: hir-opt %s -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=RING

// A loop whose only collective is a reduce to a rotating root (`root %i`: chunk i of the rows
// summed into device i) and no broadcast: the copy-engine backend lowers it as the reduce-scatter
// half of a pipeline by shard (passes/copy_engine_shard_reduce.py): the iterations rotated by
// rank, each remote partial pushed into a slot of its owner's symmetric buffer, one barrier, then
// the adds. The ring backend has no reduce of its own and keeps the NCCL reduce.

// CE-LABEL: func.func @main
// CE:         %rank = hir.device_index mesh = [0, 1]
// CE:         %received = hir.allocate() symmetric : memref<1x1x8x4xf32>
// CE:         %d = arith.remui
// CE:         fusion.matmul
// CE:         scf.if %remote {
// CE:           hir.peer_view %received device %d mesh = [0, 1]
// CE:           fusion.set
// CE:         } else {
// CE:           fusion.set
// CE:         hir.for %{{.*}} = %{{.*}} to %c2 step %c1 {
// CE:           fusion.matmul
// CE:         hir.barrier mesh = [0, 1]
// CE:         %arrived = hir.alias_select %received[%c0] axis 0
// CE:         fusion.add
// CE-NOT:     hir.reduce
// CE:         func.return %c

// RING-LABEL: func.func @main
// RING-NOT:     symmetric
// RING-NOT:     hir.collective_permute
// RING:         hir.for %{{.*}} = %c0 to %c2 step %c1 {
// RING:         hir.for %[[I:.*]] = %c0 to %c2 step %c1 {
// RING:           fusion.matmul
// RING:           %[[W:.*]] = hir.reduce sum %cu_i into %c root %[[I]] mesh = [0, 1]
// RING-NEXT:      hir.wait %[[W]]
// RING-NOT:     hir.collective_permute
// RING-NOT:     hir.reduce_scatter

func.func @main(%a: tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>,
                %b: tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %cu = fusion.matmul %a, %b : tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>, tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x4xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %cu dims = [0] : tensor<2x2x8x4xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}
