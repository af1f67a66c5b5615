// RUN: hir-opt %S/../../../../examples/multidevice/matmul_allreduce.mlir -p 'stream-lowering{backend=copy-engine}' | filecheck %s
// RUN: hir-opt %S/../../../../examples/multidevice/matmul_allreduce.mlir -p 'stream-lowering{backend=copy-engine release=start}' | filecheck %s --check-prefix=START

// The copy-engine backend of matmul + all-reduce (examples/multidevice/matmul_allreduce.mlir): the
// reduce-scatter of copy_engine_reduce_scatter.mlir over 2 blocks of the output chunk C_i (its 32
// rows, the matmul's M axis: axis 1 of A_i and of the partial), then an all-gather of the reduced
// blocks by copy engine: push this device's block into the peer's symmetric gather buffer,
// barrier, copy the peer's block into place.

// No release barrier: the all-gather's barriers order every read of the receive buffers.
// CHECK:      %[[RANK:[a-z0-9_]+]] = hir.device_index mesh = [0, 1]
// CHECK-NEXT: %[[COMM:[a-z0-9_]+]] = hir.stream %num_streams
// CHECK-NEXT: %{{.*}} = arith.addi %num_streams, %c1 : index
// CHECK-NEXT: %[[REDUCE:[a-z0-9_]+]] = hir.stream
// CHECK-NEXT: %[[RECEIVED:[a-z0-9_]+]] = hir.allocate() symmetric : memref<4x1x16x48xf32>
// CHECK-NEXT: %[[GATHERED:[a-z0-9_]+]] = hir.allocate() symmetric : memref<4x1x16x48xf32>
// CHECK-NEXT: hir.set_current_stream %[[COMM]]
// CHECK-NEXT: hir.synchronize %main
// CHECK-NEXT: hir.set_current_stream %main
// CHECK-NEXT: hir.for

// CHECK:      hir.for %[[I:[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK:        %[[S:[a-z0-9_]+]] = hir.stream
// CHECK:        %[[AI:[a-z0-9_]+]] = hir.alias_select %a[%[[I]]] axis 0
// CHECK-NEXT:   %[[PI:[a-z0-9_]+]] = hir.alias_select %p[%[[I]]] axis 0
// CHECK-NEXT:   %[[CI:[a-z0-9_]+]] = hir.alias_select %c[%[[I]]] axis 0 : memref<4x32x48xf32> -> memref<32x48xf32, strided<[48, 1], offset: ?>>
// The peer's rows (16 of the 32), split along the matmul's M axis, pushed as they are computed.
// CHECK:        hir.for %[[T:[a-z0-9_]+]] = %c1 to %c2 step %c1 {
// CHECK:          %[[TO:[a-z0-9_]+]] = arith.remui
// CHECK-NEXT:     %[[ATO:[a-z0-9_]+]] = hir.alias_chunk %[[AI]][%[[TO]]] axis 1 chunks 2 : {{.*}} -> memref<1x16x64xf32
// CHECK-NEXT:     %[[PTO:[a-z0-9_]+]] = hir.alias_chunk %[[PI]][%[[TO]]] axis 1 chunks 2
// CHECK-NEXT:     hir.launch ins(%{{.*}} = %[[ATO]], %{{.*}} = %b : {{.*}}) outs(%[[PTO]] : {{.*}}) {
// CHECK-NEXT:       fusion.matmul {{.*}} -> tensor<1x16x48xf32>
// CHECK:          hir.set_current_stream %[[COMM]]
// CHECK-NEXT:     hir.synchronize %[[S]]
// CHECK-NEXT:     hir.peer_view %[[RECEIVED]] device %[[TO]] mesh = [0, 1]
// CHECK:          hir.launch
// CHECK-NEXT:       fusion.set {{.*}} : tensor<16x48xf32> -> tensor<16x48xf32>
// CHECK:        hir.barrier mesh = [0, 1]
// This device's block of C_i: own partial + received partial, on the reduction stream.
// CHECK:        %[[BLOCK:[a-z0-9_]+]] = hir.alias_chunk %[[CI]][%[[RANK]]] axis 0 chunks 2
// CHECK:        hir.set_current_stream %[[REDUCE]]
// CHECK-NEXT:   hir.synchronize %[[S]]
// CHECK:        hir.launch ins({{.*}}) outs(%[[BLOCK]] : {{.*}}) {
// CHECK-NEXT:     fusion.add
// CHECK:        hir.set_current_stream %[[S]]
// The all-gather: the comm stream waits for the reduction and pushes the block to the peer.
// CHECK-NEXT:   hir.set_current_stream %[[COMM]]
// CHECK-NEXT:   hir.synchronize %[[REDUCE]]
// CHECK-NEXT:   hir.for %[[T2:[a-z0-9_]+]] = %c1 to %c2 step %c1 {
// CHECK:          %[[TO2:[a-z0-9_]+]] = arith.remui
// CHECK-NEXT:     %[[PEER:[a-z0-9_]+]] = hir.peer_view %[[GATHERED]] device %[[TO2]] mesh = [0, 1]
// CHECK-NEXT:     %[[PEERI:[a-z0-9_]+]] = hir.alias_select %[[PEER]][%[[I]]] axis 0
// CHECK-NEXT:     %[[K:[a-z0-9_]+]] = arith.subi %[[T2]], %c1 : index
// CHECK-NEXT:     %[[SLOT:[a-z0-9_]+]] = hir.alias_select %[[PEERI]][%[[K]]] axis 0
// CHECK-NEXT:     hir.launch ins(%{{.*}} = %[[BLOCK]] : {{.*}}) outs(%[[SLOT]] : {{.*}}) {
// CHECK-NEXT:       fusion.set
// CHECK-NEXT:       hir.yield
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   hir.barrier mesh = [0, 1]
// Every block has landed: the reduction stream copies the peer's, (rank - t) mod 2, into place.
// CHECK-NEXT:   hir.set_current_stream %[[REDUCE]]
// CHECK-NEXT:   hir.synchronize %[[COMM]]
// CHECK-NEXT:   hir.for %[[T3:[a-z0-9_]+]] = %c1 to %c2 step %c1 {
// CHECK-NEXT:     %[[AHEAD:[a-z0-9_]+]] = arith.addi %[[RANK]], %c2 : index
// CHECK-NEXT:     %[[BEHIND:[a-z0-9_]+]] = arith.subi %[[AHEAD]], %[[T3]] : index
// CHECK-NEXT:     %[[FROM:[a-z0-9_]+]] = arith.remui %[[BEHIND]], %c2 : index
// CHECK-NEXT:     %[[INTO:[a-z0-9_]+]] = hir.alias_chunk %[[CI]][%[[FROM]]] axis 0 chunks 2
// CHECK-NEXT:     %[[MINE:[a-z0-9_]+]] = hir.alias_select %[[GATHERED]][%[[I]]] axis 0
// CHECK-NEXT:     %[[K3:[a-z0-9_]+]] = arith.subi %[[T3]], %c1 : index
// CHECK-NEXT:     %[[ARRIVED:[a-z0-9_]+]] = hir.alias_select %[[MINE]][%[[K3]]] axis 0
// CHECK-NEXT:     hir.launch ins(%{{.*}} = %[[ARRIVED]] : {{.*}}) outs(%[[INTO]] : {{.*}}) {
// CHECK-NEXT:       fusion.set
// CHECK-NEXT:       hir.yield
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   hir.set_current_stream %[[S]]
// CHECK-NEXT:   hir.set_current_stream %main
// CHECK-NEXT:   hir.synchronize %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: hir.synchronize %[[REDUCE]]
// CHECK-NEXT: func.return %c

// release=start asks for the release barrier anyway.
// START:      hir.set_current_stream %comm
// START-NEXT: hir.synchronize %main
// START-NEXT: hir.barrier mesh = [0, 1]
// START-NEXT: hir.set_current_stream %main
