// RUN: hir-opt %S/../../../../examples/multidevice/matmul_reduce_scatter.mlir -p 'stream-lowering{backend=copy-engine}' | filecheck %s
// RUN: hir-opt %S/../../../../examples/multidevice/matmul_reduce_scatter.mlir -p 'stream-lowering{backend=copy-engine release=end}' | filecheck %s --check-prefix=END
// RUN: hir-opt %S/../../../../examples/multidevice/matmul_reduce_scatter.mlir -p 'stream-lowering{backend=copy-engine chunks=2}' | filecheck %s --check-prefix=PIECES

// The copy-engine backend of GEMM + reduce-scatter (examples/multidevice/matmul_reduce_scatter.mlir):
// per chunk i, the GEMM split by destination through the matmul's axis map (axis 1 of A_i and of
// the partial P_i), the peer's rows first in rotated order, each partial pushed into the peer's
// symmetric receive buffer on the comm stream; then the own rows, a barrier on the comm stream,
// and on the reduction stream C_i = own partial + received partial.

// Before the loop: the comm stream (pool stream num_streams) and the reduction stream (one past
// it), the receive buffer (4 chunks x 1 peer x the 1x16x48 block), and the release barrier first
// on the comm stream.
// CHECK:      %[[RANK:[a-z0-9_]+]] = hir.device_index mesh = [0, 1]
// CHECK-NEXT: %[[COMM:[a-z0-9_]+]] = hir.stream %num_streams
// CHECK-NEXT: %[[NEXT:[a-z0-9_]+]] = arith.addi %num_streams, %c1 : index
// CHECK-NEXT: %[[REDUCE:[a-z0-9_]+]] = hir.stream %[[NEXT]]
// CHECK-NEXT: %[[RECEIVED:[a-z0-9_]+]] = hir.allocate() symmetric : memref<4x1x1x16x48xf32>
// CHECK-NEXT: hir.set_current_stream %[[COMM]]
// CHECK-NEXT: hir.synchronize %main
// CHECK-NEXT: hir.barrier mesh = [0, 1]
// CHECK-NEXT: hir.set_current_stream %main
// CHECK-NEXT: hir.for

// CHECK:      hir.for %[[I:[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK:        %[[S:[a-z0-9_]+]] = hir.stream
// CHECK-NEXT:   hir.set_current_stream %[[S]]
// CHECK-NEXT:   %[[AI:[a-z0-9_]+]] = hir.alias_select %a[%[[I]]] axis 0
// CHECK-NEXT:   %[[BI:[a-z0-9_]+]] = hir.alias_select %b[%c0] axis 0
// CHECK-NEXT:   %[[PI:[a-z0-9_]+]] = hir.alias_select %p[%[[I]]] axis 0
// CHECK-NEXT:   %[[CI:[a-z0-9_]+]] = hir.alias_select %c[%[[I]]] axis 0
// CHECK-NEXT:   %[[C2:[a-z0-9_]+]] = arith.constant 2 : index
// The peers' partials: destination (rank + t) mod 2 for t = 1 .. 1.
// CHECK-NEXT:   hir.for %[[T:[a-z0-9_]+]] = %c1 to %[[C2]] step %c1 {
// CHECK-NEXT:     %[[SUM:[a-z0-9_]+]] = arith.addi %[[RANK]], %[[T]] : index
// CHECK-NEXT:     %[[TO:[a-z0-9_]+]] = arith.remui %[[SUM]], %[[C2]] : index
// CHECK-NEXT:     %[[ATO:[a-z0-9_]+]] = hir.alias_chunk %[[AI]][%[[TO]]] axis 1 chunks 2
// CHECK-NEXT:     %[[PTO:[a-z0-9_]+]] = hir.alias_chunk %[[PI]][%[[TO]]] axis 1 chunks 2
// CHECK-NEXT:     hir.launch ins(%{{.*}} = %[[ATO]], %{{.*}} = %[[BI]] : {{.*}}) outs(%[[PTO]] : {{.*}}) {
// CHECK-NEXT:       fusion.matmul {{.*}} : tensor<1x1x16x64xf32>, tensor<1x1x64x48xf32> -> tensor<1x1x16x48xf32>
// CHECK:          hir.set_current_stream %[[COMM]]
// CHECK-NEXT:     hir.synchronize %[[S]]
// CHECK-NEXT:     %[[PEER:[a-z0-9_]+]] = hir.peer_view %[[RECEIVED]] device %[[TO]] mesh = [0, 1]
// CHECK-NEXT:     %[[PEERI:[a-z0-9_]+]] = hir.alias_select %[[PEER]][%[[I]]] axis 0
// CHECK-NEXT:     %[[K:[a-z0-9_]+]] = arith.subi %[[T]], %c1 : index
// CHECK-NEXT:     %[[SLOT:[a-z0-9_]+]] = hir.alias_select %[[PEERI]][%[[K]]] axis 0 : {{.*}} -> memref<1x16x48xf32, strided<[768, 48, 1], offset: ?>>
// CHECK-NEXT:     %[[PARTIAL:[a-z0-9_]+]] = hir.alias_select %[[PTO]][%c0] axis 0 : {{.*}} -> memref<1x16x48xf32, strided<[768, 48, 1], offset: ?>>
// CHECK-NEXT:     hir.launch ins(%{{.*}} = %[[PARTIAL]] : {{.*}}) outs(%[[SLOT]] : {{.*}}) {
// CHECK-NEXT:       fusion.set
// CHECK:          hir.set_current_stream %[[S]]
// CHECK-NEXT:   }
// Every device has pushed chunk i once the comm stream passes the barrier.
// CHECK-NEXT:   hir.set_current_stream %[[COMM]]
// CHECK-NEXT:   hir.barrier mesh = [0, 1]
// CHECK-NEXT:   hir.set_current_stream %[[REDUCE]]
// CHECK-NEXT:   hir.synchronize %[[COMM]]
// CHECK-NEXT:   hir.set_current_stream %[[S]]
// CHECK-NEXT:   %[[MINE:[a-z0-9_]+]] = hir.alias_select %[[RECEIVED]][%[[I]]] axis 0
// The own rows last, then C_i = own + received on the reduction stream.
// CHECK-NEXT:   %[[AOWN:[a-z0-9_]+]] = hir.alias_chunk %[[AI]][%[[RANK]]] axis 1 chunks 2
// CHECK-NEXT:   %[[POWN:[a-z0-9_]+]] = hir.alias_chunk %[[PI]][%[[RANK]]] axis 1 chunks 2
// CHECK-NEXT:   hir.launch ins(%{{.*}} = %[[AOWN]], %{{.*}} = %[[BI]] : {{.*}}) outs(%[[POWN]] : {{.*}}) {
// CHECK-NEXT:     fusion.matmul
// CHECK:        hir.set_current_stream %[[REDUCE]]
// CHECK-NEXT:   hir.synchronize %[[S]]
// CHECK-NEXT:   %[[OWN:[a-z0-9_]+]] = hir.alias_select %[[POWN]][%c0] axis 0
// CHECK-NEXT:   %[[ARRIVED:[a-z0-9_]+]] = hir.alias_select %[[MINE]][%c0] axis 0
// CHECK-NEXT:   hir.launch ins(%{{.*}} = %[[OWN]], %{{.*}} = %[[ARRIVED]] : {{.*}}) outs(%[[CI]] : {{.*}}) {
// CHECK-NEXT:     fusion.add {{.*}} : tensor<1x16x48xf32>, tensor<1x16x48xf32> -> tensor<1x16x48xf32>
// CHECK:        hir.set_current_stream %[[S]]
// CHECK-NEXT:   hir.set_current_stream %main
// CHECK-NEXT:   hir.synchronize %[[S]]
// CHECK-NEXT: }
// After the loop the caller's stream waits for the reduction stream; no barrier at the end.
// CHECK-NEXT: hir.synchronize %[[REDUCE]]
// CHECK-NEXT: func.return %c

// release=end: no barrier at the start; the caller's stream waits for the reduction stream, then
// the devices meet before returning.
// END:      hir.set_current_stream %comm
// END-NEXT: hir.synchronize %main
// END-NEXT: hir.set_current_stream %main
// END:      hir.barrier mesh = [0, 1]
// END:      hir.synchronize %reduce
// END-NEXT: hir.barrier mesh = [0, 1]
// END-NEXT: func.return

// chunks=2: the own GEMM and its add in 2 pieces of the block's 16 rows, each add waiting for its piece.
// PIECES:      hir.for %t
// PIECES:      hir.barrier mesh = [0, 1]
// PIECES-NEXT: hir.set_current_stream %reduce
// PIECES-NEXT: hir.synchronize %comm
// PIECES:      hir.for %[[PIECE:[a-z0-9_]+]] = %c0 to %c2 step %c1 {
// PIECES-NEXT:   %[[AOWN:[a-z0-9_]+]] = hir.alias_chunk %a_i[%rank] axis 1 chunks 2
// PIECES-NEXT:   %[[POWN:[a-z0-9_]+]] = hir.alias_chunk %p_i[%rank] axis 1 chunks 2
// PIECES-NEXT:   %[[APIECE:[a-z0-9_]+]] = hir.alias_chunk %[[AOWN]][%[[PIECE]]] axis 2 chunks 2
// PIECES-NEXT:   %[[PPIECE:[a-z0-9_]+]] = hir.alias_chunk %[[POWN]][%[[PIECE]]] axis 2 chunks 2
// PIECES-NEXT:   hir.launch ins(%{{.*}} = %[[APIECE]], %{{.*}} = %b_i : {{.*}}) outs(%[[PPIECE]] : {{.*}}) {
// PIECES-NEXT:     fusion.matmul {{.*}} -> tensor<1x1x8x48xf32>
// PIECES:        hir.set_current_stream %reduce
// PIECES-NEXT:   hir.synchronize %s
// PIECES-NEXT:   %[[OWN:[a-z0-9_]+]] = hir.alias_select %[[PPIECE]][%c0] axis 0
// PIECES-NEXT:   %[[OUT:[a-z0-9_]+]] = hir.alias_chunk %c_i[%[[PIECE]]] axis 1 chunks 2
// PIECES-NEXT:   %[[ARRIVED:[a-z0-9_]+]] = hir.alias_select %received_i[%c0] axis 0
// PIECES-NEXT:   %[[IN:[a-z0-9_]+]] = hir.alias_chunk %[[ARRIVED]][%[[PIECE]]] axis 1 chunks 2
// PIECES-NEXT:   hir.launch ins(%{{.*}} = %[[OWN]], %{{.*}} = %[[IN]] : {{.*}}) outs(%[[OUT]] : {{.*}}) {
// PIECES-NEXT:     fusion.add {{.*}} -> tensor<1x8x48xf32>
// PIECES:        hir.set_current_stream %s
// PIECES-NEXT: }
