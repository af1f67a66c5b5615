// RUN: hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'stream-lowering{backend=copy-engine chunks=2}' | filecheck %s
// RUN: hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'stream-lowering{backend=copy-engine}' | filecheck %s --check-prefix=AUTO
// RUN: hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'stream-lowering' | filecheck %s --check-prefix=COLL

// The copy-engine backend of the loop over the devices' shards (didx -> stream): a comm stream,
// a symmetric slot buffer, the loop rotated by rank with its first (local) iteration peeled, and
// in a remote iteration chunked pushes into the peer's slots, each followed by a barrier and by
// the GEMM on the chunk that has landed. The local iteration multiplies the local shard in place.

// CHECK:      %rank = hir.device_index mesh = [0, 1]
// CHECK-NEXT: %comm = hir.stream %num_streams
// CHECK-NEXT: %[[SLOTS:.*]] = hir.allocate() symmetric : memref<2x64x256xf32>
// CHECK-NEXT: hir.set_current_stream %comm
// CHECK-NEXT: hir.synchronize %main
// CHECK-NEXT: hir.set_current_stream %main
// CHECK-NEXT: hir.for
// CHECK:      hir.synchronize %main
// CHECK-NEXT: }
// Peeled first iteration: device d = (0 + rank) mod 2, the local one.
// CHECK:      %[[D:.*]] = arith.remui %{{.*}}, %c2 : index
// CHECK:      %[[TO:.*]] = arith.remui %{{.*}}, %c2 : index
// CHECK:      %[[SHARD:.*]] = hir.alias_select %a[%c0] axis 0
// CHECK:      %[[REMOTE:.*]] = arith.cmpi ne, %[[D]], %rank : index
// CHECK-NEXT: scf.if %[[REMOTE]] {
// CHECK-NEXT:   %[[PEER:.*]] = hir.peer_view %[[SLOTS]] device %[[TO]] mesh = [0, 1]
// CHECK-NEXT:   %[[MINE:.*]] = hir.alias_select %[[PEER]][%rank] axis 0
// CHECK-NEXT:   %[[RECEIVED:.*]] = hir.alias_select %[[SLOTS]][%[[D]]] axis 0
// CHECK-NEXT:   hir.for %[[CHUNK:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:     hir.set_current_stream %comm
// CHECK-NEXT:     %[[FROM:.*]] = hir.alias_chunk %[[SHARD]][%[[CHUNK]]] axis 0 chunks 2
// CHECK-NEXT:     %[[INTO:.*]] = hir.alias_chunk %[[MINE]][%[[CHUNK]]] axis 0 chunks 2
// CHECK-NEXT:     hir.launch ins(%{{.*}} = %[[FROM]] : {{.*}}) outs(%[[INTO]] : {{.*}}) {
// CHECK-NEXT:       fusion.set
// CHECK:          hir.barrier mesh = [0, 1]
// CHECK-NEXT:     hir.set_current_stream %s
// CHECK-NEXT:     hir.synchronize %comm
// CHECK-NEXT:     %[[A:.*]] = hir.alias_chunk %[[RECEIVED]][%[[CHUNK]]] axis 0 chunks 2
// CHECK-NEXT:     %[[C:.*]] = hir.alias_chunk %{{.*}}[%[[CHUNK]]] axis 0 chunks 2
// CHECK-NEXT:     hir.launch ins(%{{.*}} = %[[A]], %{{.*}} = %b : {{.*}}) outs(%[[C]] : {{.*}}) {
// CHECK-NEXT:       fusion.matmul {{.*}} -> tensor<32x128xf32>
// CHECK:        } else {
// CHECK-NEXT:   hir.launch ins(%{{.*}} = %[[SHARD]], %{{.*}} = %b : {{.*}}) outs(%{{.*}} : {{.*}}) {
// CHECK-NEXT:     fusion.matmul {{.*}} -> tensor<64x128xf32>
// The rest of the loop, from iteration 1:
// CHECK:      hir.for %{{.*}} = %{{.*}} to %c2 step %c1 {
// CHECK:        scf.if
// At the end the caller's stream waits for the comm stream and the devices meet once more.
// CHECK:      hir.set_current_stream %main
// CHECK-NEXT: hir.synchronize %s{{.*}}
// CHECK-NEXT: }
// CHECK-NEXT: hir.synchronize %comm
// CHECK-NEXT: hir.barrier mesh = [0, 1]
// CHECK-NEXT: func.return

// Shards this small get one push each (no chunk loop).
// AUTO:     scf.if
// AUTO-NOT: chunks
// AUTO:     hir.barrier mesh = [0, 1]
// AUTO-NEXT: hir.set_current_stream %s

// The default backend keeps NCCL: a broadcast rooted at the loop index, no symmetric memory.
// COLL-NOT: symmetric
// COLL:     hir.broadcast %{{.*}} into %{{.*}} root %i{{.*}} mesh = [0, 1]
// COLL-NEXT: hir.wait
