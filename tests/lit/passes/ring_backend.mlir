// RUN: hir-opt %s -p 'stream-lowering{backend=ring}' | filecheck %s
// RUN: hir-opt %S/../../../examples/ag_matmul.mlir -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=AG2
// RUN: hir-opt %S/../../../examples/multidevice/matmul_reduce_scatter.mlir -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=RS
// RUN: hir-opt %S/../../../examples/multidevice/matmul_allreduce.mlir -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=AR
// RUN: hir-opt %S/../../resharding/uneven_chunks_allreduce.mlir -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=KEEP-AR
// RUN: hir-opt %S/../../resharding/shard_loop_inner_axis.mlir -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=KEEP-BCAST

// The ring backend: the per-chunk all-gather of AG+GEMM on 4 devices becomes D-1 = 3
// collective-permute steps (offset 1) on the worker stream, each waited for before the next. Device
// r first copies its own shard into chunk r of the gathered buffer; at step j it receives chunk
// (r - j) mod 4 = (r + 4 - j) mod 4 from r - 1 while it sends the chunk of step j - 1 (its shard
// at step 1) to r + 1. The GEMM then reads the whole gathered chunk.

func.func @main(%a: tensor<2x4x8x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2, 3]>>,
                %b: tensor<32x24xf32>) -> tensor<2x4x8x24xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x4x8x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<32x24xf32> -> tensor<2x4x8x24xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %c : tensor<2x4x8x24xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}

// CHECK-NOT:  hir.allgather
// CHECK:      hir.synchronize %main
// CHECK-NEXT: }
// CHECK-NEXT: hir.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:   %[[K:.*]] = arith.remui %[[I]], %num_streams : index
// CHECK-NEXT:   %[[S:.*]] = hir.stream %[[K]]
// CHECK-NEXT:   hir.set_current_stream %[[S]]
// CHECK-NEXT:   %[[A:.*]] = hir.alias_select %a[%[[I]]] axis 0 : memref<2x1x8x32xf32> -> memref<1x8x32xf32, strided<[256, 32, 1], offset: ?>>
// CHECK-NEXT:   %[[G:.*]] = hir.alias_select %a_gathered[%[[I]]] axis 0 : memref<2x4x8x32xf32> -> memref<4x8x32xf32, strided<[256, 32, 1], offset: ?>>
// CHECK-NEXT:   %me = hir.device_index mesh = [0, 1, 2, 3] outside 0
// CHECK-NEXT:   %own = hir.alias_chunk %[[G]][%me] axis 0 chunks 4
// CHECK-NEXT:   hir.launch ins(%{{.*}} = %[[A]] : {{.*}}) outs(%own : {{.*}}) {
// CHECK-NEXT:     fusion.set
// CHECK-NEXT:     hir.yield
// CHECK-NEXT:   }
// Step 1: chunk (r + 3) mod 4 arrives while the shard leaves.
// CHECK-NEXT:   %c3 = arith.constant 3 : index
// CHECK-NEXT:   %c4 = arith.constant 4 : index
// CHECK-NEXT:   %[[R3:.*]] = arith.addi %me, %c3 : index
// CHECK-NEXT:   %[[AT1:.*]] = arith.remui %[[R3]], %c4 : index
// CHECK-NEXT:   %[[SLOT1:.*]] = hir.alias_chunk %[[G]][%[[AT1]]] axis 0 chunks 4 : memref<4x8x32xf32, strided<[256, 32, 1], offset: ?>> -> memref<1x8x32xf32, strided<[256, 32, 1], offset: ?>>
// CHECK-NEXT:   %[[W1:.*]] = hir.collective_permute %[[A]] into %[[SLOT1]] offset 1 mesh = [0, 1, 2, 3] : memref<1x8x32xf32, strided<[256, 32, 1], offset: ?>>, memref<1x8x32xf32, strided<[256, 32, 1], offset: ?>>
// CHECK-NEXT:   hir.wait %[[W1]]
// Step 2: chunk (r + 2) mod 4, forwarding the one received at step 1.
// CHECK-NEXT:   %[[R2:.*]] = arith.addi %me, %c2 : index
// CHECK-NEXT:   %[[AT2:.*]] = arith.remui %[[R2]], %c4 : index
// CHECK-NEXT:   %[[SLOT2:.*]] = hir.alias_chunk %[[G]][%[[AT2]]] axis 0 chunks 4
// CHECK-NEXT:   %[[W2:.*]] = hir.collective_permute %[[SLOT1]] into %[[SLOT2]] offset 1 mesh = [0, 1, 2, 3]
// CHECK-NEXT:   hir.wait %[[W2]]
// Step 3: chunk (r + 1) mod 4; the ring is complete.
// CHECK-NEXT:   %[[R1:.*]] = arith.addi %me, %c1 : index
// CHECK-NEXT:   %[[AT3:.*]] = arith.remui %[[R1]], %c4 : index
// CHECK-NEXT:   %[[SLOT3:.*]] = hir.alias_chunk %[[G]][%[[AT3]]] axis 0 chunks 4
// CHECK-NEXT:   %[[W3:.*]] = hir.collective_permute %[[SLOT2]] into %[[SLOT3]] offset 1 mesh = [0, 1, 2, 3]
// CHECK-NEXT:   hir.wait %[[W3]]
// CHECK-NEXT:   %[[C:.*]] = hir.alias_select %c[%[[I]]] axis 0
// CHECK-NEXT:   hir.launch ins(%{{.*}} = %[[G]], %{{.*}} = %b : {{.*}}) outs(%[[C]] : {{.*}}) {
// CHECK-NEXT:     fusion.matmul
// CHECK:        hir.set_current_stream %main
// CHECK-NEXT:   hir.synchronize %[[S]]
// CHECK-NEXT: }
// CHECK-NOT:  hir.collective_permute

// examples/ag_matmul.mlir (2 devices): one step per chunk, the peer's shard into chunk (r + 1) mod 2.
// AG2-NOT:  hir.allgather
// AG2:      %me = hir.device_index mesh = [0, 1] outside 0
// AG2-NEXT: %own = hir.alias_chunk %a_gathered_i[%me] axis 0 chunks 2
// AG2-NEXT: hir.launch ins(%{{.*}} = %a_i : {{.*}}) outs(%own : {{.*}})
// AG2:      %c2 = arith.constant 2 : index
// AG2-NEXT: %[[R:.*]] = arith.addi %me, %c1 : index
// AG2-NEXT: %[[AT:.*]] = arith.remui %[[R]], %c2 : index
// AG2-NEXT: %slot = hir.alias_chunk %a_gathered_i[%[[AT]]] axis 0 chunks 2
// AG2-NEXT: %[[W:.*]] = hir.collective_permute %a_i into %slot offset 1 mesh = [0, 1] : memref<1x64x256xf32, strided<[16384, 256, 1], offset: ?>>, memref<1x64x256xf32, strided<[16384, 256, 1], offset: ?>>
// AG2-NEXT: hir.wait %[[W]]
// AG2-NEXT: %c_i = hir.alias_select %c[%i_1] axis 0
// AG2-NEXT: hir.launch ins(%{{.*}} = %a_gathered_i, %{{.*}} = %b : {{.*}}) outs(%c_i : {{.*}})
// AG2-NOT:  hir.collective_permute

// GEMM + reduce-scatter (2 devices): device r sends its partial of chunk (r + 1) mod 2 (a view, no
// copy), receives the peer's partial of chunk r and adds its own into the output chunk.
// RS-NOT:  hir.reduce_scatter
// RS:      %partial = hir.alias_select %p_i[%c0] axis 0 : {{.*}} -> memref<2x16x48xf32, strided<[768, 48, 1], offset: ?>>
// RS-NEXT: %me = hir.device_index mesh = [0, 1] outside 0
// RS-NEXT: %received = hir.allocate() : memref<1x16x48xf32>
// RS-NEXT: %c2 = arith.constant 2 : index
// RS-NEXT: %[[R:.*]] = arith.addi %me, %c1 : index
// RS-NEXT: %[[AT:.*]] = arith.remui %[[R]], %c2 : index
// RS-NEXT: %[[SENT:.*]] = hir.alias_chunk %partial[%[[AT]]] axis 0 chunks 2
// RS-NEXT: %[[W:.*]] = hir.collective_permute %[[SENT]] into %received offset 1 mesh = [0, 1]
// RS-NEXT: hir.wait %[[W]]
// RS-NEXT: %[[MINE:.*]] = hir.alias_chunk %partial[%me] axis 0 chunks 2
// RS-NEXT: hir.launch ins(%{{.*}} = %received, %{{.*}} = %[[MINE]] : {{.*}}) outs(%c_i : memref<1x16x48xf32, strided<[768, 48, 1], offset: ?>>) {
// RS-NEXT:   fusion.add
// RS-NEXT:   hir.yield
// RS-NEXT: }
// RS-NEXT: hir.set_current_stream %main

// matmul + all-reduce (2 devices): the ring reduce-scatter of the output chunk's 2 row blocks,
// block r summed in place, then the ring all-gather of the blocks in the output chunk.
// AR-NOT:  hir.allreduce
// AR:      %me = hir.device_index mesh = [0, 1] outside 0
// AR-NEXT: %own = hir.alias_chunk %c_i[%me] axis 0 chunks 2 : memref<32x48xf32, strided<[48, 1], offset: ?>> -> memref<16x48xf32, strided<[48, 1], offset: ?>>
// AR-NEXT: %received = hir.allocate() : memref<16x48xf32>
// AR:      %[[OTHER:.*]] = hir.alias_chunk %c_i[%{{.*}}] axis 0 chunks 2
// AR-NEXT: %[[W1:.*]] = hir.collective_permute %[[OTHER]] into %received offset 1 mesh = [0, 1]
// AR-NEXT: hir.wait %[[W1]]
// AR-NEXT: hir.launch ins(%{{.*}} = %received, %{{.*}} = %own : {{.*}}) outs(%own : {{.*}}) {
// AR-NEXT:   fusion.add
// AR-NEXT:   hir.yield
// AR-NEXT: }
// AR-NEXT: %[[W2:.*]] = hir.collective_permute %own into %[[OTHER]] offset 1 mesh = [0, 1]
// AR-NEXT: hir.wait %[[W2]]
// AR-NEXT: hir.set_current_stream %main

// What the ring does not take keeps its NCCL collective: an all-reduce whose rows are an uneven
// stream(3) chunk (a dynamic extent: blocks that may differ between devices), a broadcast.
// KEEP-AR-NOT: hir.collective_permute
// KEEP-AR:     hir.allreduce sum
// KEEP-BCAST-NOT: hir.collective_permute
// KEEP-BCAST:     hir.broadcast
