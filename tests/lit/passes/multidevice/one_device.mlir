// RUN: hir-opt %S/../../../resharding/one_device/allgather_1.mlir --stream-lowering | filecheck %s --check-prefix=GATHER
// RUN: hir-opt %S/../../../resharding/one_device/allreduce_1.mlir -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=REDUCE
// RUN: hir-opt %S/../../../resharding/one_device/ag_matmul_by_device_1.mlir -p 'stream-lowering{backend=copy-engine}' | filecheck %s --check-prefix=PUSH
// RUN: hir-opt %S/../../../resharding/one_device/ag_matmul_by_device_1.mlir -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=RING
// RUN: hir-opt %S/../../../resharding/one_device/matmul_allreduce_1.mlir -p 'stream-lowering{backend=copy-engine}' | filecheck %s --check-prefix=CE-REDUCE
// RUN: hir-opt %S/../../../resharding/one_device/tp_mlp_1.mlir -p 'fusion-stream-overlap{overlap=by-shard}' | filecheck %s --check-prefix=BY-SHARD

// A mesh of one device (`mesh = [0]`, every didx axis of extent 1) lowers like a mesh of two:
// the same loops and the same collectives, over `mesh = [0]`. At run time each of them is a
// local copy (docs/multidevice.md, "Meshes of one device").

// GATHER:      %y = hir.allocate() : memref<1x8x16xf32>
// GATHER-NEXT: %0 = hir.allgather %x into %y axis 0 mesh = [0] : memref<1x8x16xf32>, memref<1x8x16xf32>
// GATHER-NEXT: hir.wait %0

// The ring backend has no ring of one device to build: the all-reduce stays a collective, in place.
// REDUCE:     fusion.sum %x_1 dims = [0] : tensor<1x8x16xf32> -> tensor<8x16xf32>
// REDUCE:     %0 = hir.allreduce sum %y into %y mesh = [0] : memref<8x16xf32>, memref<8x16xf32>
// REDUCE-NOT: hir.collective_permute

// The copy-engine loop over the shards: one iteration, on the device's own shard (d == rank, no push
// runs), then the final barrier over the one device.
// PUSH:      %rank = hir.device_index mesh = [0]
// PUSH:      %a_gathered_symmetric = hir.allocate() symmetric : memref<1x16x32xf32>
// PUSH:      %d = arith.remui %{{.*}}, %c1 : index
// PUSH:      %remote = arith.cmpi ne, %d, %rank : index
// PUSH:      scf.if %remote {
// PUSH:        hir.peer_view %a_gathered_symmetric device %to mesh = [0]
// PUSH:      %shard = arith.select %remote, %received, %a_i
// PUSH:      fusion.matmul
// PUSH:      hir.barrier mesh = [0]
// PUSH-NEXT: func.return

// RING:     %0 = hir.broadcast %a_i into %a_gathered_i root %c0 mesh = [0]
// RING-NOT: hir.collective_permute

// The copy-engine matmul + all-reduce has no peer to push partial sums to: the all-reduce stays.
// CE-REDUCE:     hir.for %i_1 = %c0 to %c4 step %c1 {
// CE-REDUCE:       fusion.matmul
// CE-REDUCE:       %0 = hir.allreduce sum %c_i into %c_i mesh = [0]
// CE-REDUCE-NOT: hir.peer_view

// overlap=by-shard has one shard to pipeline over: the TP block is left as written.
// BY-SHARD: %h = fusion.matmul {{.*}} -> tensor<1x1x1x8x32xf32, #fusion.parallel<[didx, stream, serial, serial, serial], mesh = [0]>>
// BY-SHARD: %y = fusion.sum {{.*}} -> tensor<1x1x8x16xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>>
