// RUN: hir-opt %S/../../../../examples/multidevice/tp_mlp.mlir -p 'stream-lowering{backend=copy-engine overlap=by-shard}' | filecheck %s
// RUN: hir-opt %S/../../../../examples/multidevice/tp_mlp.mlir -p 'stream-lowering{overlap=by-shard}' | filecheck %s --check-prefix=NCCL
// RUN: sed 's/fusion.sum/fusion.max/' %S/../../../../examples/multidevice/tp_mlp.mlir | hir-opt -p 'stream-lowering{backend=copy-engine overlap=by-shard}' | filecheck %s --check-prefix=MAX

// The tensor-parallel MLP pipelined by shard on the copy engines: a loop over the devices'
// shards, rotated by rank. Iteration i pushes this device's rows to device (rank - i) mod D (the
// all-gather), multiplies the rows of device d = (i + rank) mod D by both GEMMs, then pushes the
// partial of those rows into device d's receive buffer on a stream of its own (the
// reduce-scatter), or, for its own rows, copies it into the output. After the loop, one barrier
// on the comm stream (every partial has landed) and the adds of the received partials.

// CHECK:      %y = hir.allocate() : memref<1x1x32x32xf32>
// CHECK:      %comm = hir.stream %num_streams
// CHECK:      %[[PUSHER:.*]] = hir.stream %{{.*}}
// CHECK-NEXT: %[[SLOTS:.*]] = hir.allocate() symmetric : memref<2x1x32x32xf32>
// CHECK-NEXT: %[[RECEIVED:.*]] = hir.allocate() symmetric : memref<1x1x1x32x32xf32>
// The peeled first iteration: the local shard, no push; its partial is copied into the output.
// CHECK:      %[[D:.*]] = arith.remui %{{.*}}, %c2 : index
// CHECK:      %[[REMOTE:.*]] = arith.cmpi ne, %[[D]], %rank : index
// CHECK:      fusion.matmul
// CHECK:      fusion.gelu
// CHECK:      fusion.matmul
// CHECK:      scf.if %[[REMOTE]] {
// CHECK-NEXT:   hir.set_current_stream %[[PUSHER]]
// CHECK-NEXT:   hir.synchronize %[[WORKER:s_[0-9]+]]
// CHECK:        %[[PEER:.*]] = hir.peer_view %[[RECEIVED]] device %[[D]] mesh = [0, 1]
// CHECK-NEXT:   %[[SLOT:.*]] = hir.alias_select %[[PEER]][%{{.*}}] axis 0
// CHECK-NEXT:   hir.launch ins(%{{.*}} = %{{.*}} : {{.*}}) outs(%[[SLOT]] : {{.*}}) {
// CHECK-NEXT:     fusion.set
// CHECK:        hir.set_current_stream %[[WORKER]]
// CHECK-NEXT: } else {
// CHECK-NEXT:   hir.launch ins(%{{.*}} = %{{.*}} : {{.*}}) outs(%y : memref<1x1x32x32xf32>) {
// CHECK-NEXT:     fusion.set
// The other iterations push the shard to a peer, meet it at a barrier, then compute.
// CHECK:      hir.for
// CHECK:        hir.peer_view %[[SLOTS]]
// CHECK:        hir.barrier mesh = [0, 1]
// CHECK:        hir.peer_view %[[RECEIVED]]
// After the loop: every partial has landed once the comm stream passes the barrier.
// CHECK:      hir.set_current_stream %comm
// CHECK-NEXT: hir.synchronize %[[PUSHER]]
// CHECK-NEXT: hir.barrier mesh = [0, 1]
// CHECK-NEXT: hir.set_current_stream %main
// CHECK-NEXT: hir.synchronize %comm
// CHECK:      %[[ARRIVED:.*]] = hir.alias_select %[[RECEIVED]][%c0] axis 0
// CHECK-NEXT: hir.launch ins(%{{.*}} = %y, %{{.*}} = %[[ARRIVED]] : {{.*}}) outs(%y : memref<1x1x32x32xf32>) {
// CHECK-NEXT:   fusion.add
// CHECK-NOT:  hir.{{allgather|broadcast|reduce |reduce_scatter}}
// CHECK:      func.return %y

// Over NCCL the same loop broadcasts shard i and reduces device i's rows to it.
// NCCL:      hir.broadcast %{{.*}} root %{{.*}} mesh = [0, 1]
// NCCL:      hir.reduce sum %{{.*}} into %y root %{{.*}} mesh = [0, 1]

// A max over the devices is an all-to-all after the loop, which the shards' pushes leave alone.
// MAX:     hir.peer_view
// MAX:     hir.barrier
// MAX:     hir.all_to_all
// MAX-NOT: hir.{{broadcast|reduce }}

