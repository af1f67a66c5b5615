// RUN: hir-opt %s -p 'stream-lowering{backend=ring}' | filecheck %s
// RUN: hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=TWO
// RUN: hir-opt %S/../../../resharding/shard_loop_inner_axis.mlir -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=KEEP

// The ring backend of a loop over the devices' shards (didx -> stream), nvFuser's ring-based
// AG+GEMM: iteration i works on shard d = (i + rank) mod 4, the first (peeled) on the local shard;
// each later one receives shard d from the next device with one collective-permute of offset 3
// (= -1) on the comm stream, while it passes on the shard of the iteration before, (d + 3) mod 4:
// the local shard right after the first iteration, else the slot it was received into. The GEMM
// waits for the comm stream, then reads the received slot.

func.func @main(%a: tensor<4x16x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>,
                %b: tensor<32x24xf32>) -> tensor<4x16x24xf32, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<4x16x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<32x24xf32> -> tensor<4x16x24xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<4x16x24xf32, #fusion.parallel<[stream, serial, serial]>>
}

// CHECK-NOT:  hir.broadcast
// CHECK:      %[[SLOTS:.*]] = hir.allocate() : memref<4x16x32xf32>
// CHECK:      %rank = hir.device_index mesh = [0, 1, 2, 3]
// CHECK-NEXT: %comm = hir.stream %num_streams
// CHECK-NEXT: hir.set_current_stream %comm
// CHECK-NEXT: hir.synchronize %main
// CHECK-NEXT: hir.set_current_stream %main
// The first iteration, peeled: the local shard, no transfer.
// CHECK:      %[[T0:.*]] = arith.addi %c0, %rank : index
// CHECK-NEXT: %[[D0:.*]] = arith.remui %[[T0]], %c4 : index
// CHECK-NEXT: %[[LOCAL:.*]] = hir.alias_select %a[%c0] axis 0 : memref<1x16x32xf32>
// CHECK-NEXT: %[[REMOTE0:.*]] = arith.cmpi ne, %[[D0]], %rank : index
// CHECK-NEXT: %[[RECEIVED0:.*]] = hir.alias_select %[[SLOTS]][%[[D0]]] axis 0
// CHECK-NEXT: scf.if %[[REMOTE0]] {
// CHECK:      }
// CHECK-NEXT: %[[SHARD0:.*]] = arith.select %[[REMOTE0]], %[[RECEIVED0]], %[[LOCAL]]
// CHECK:      hir.launch ins(%{{.*}} = %[[SHARD0]], %{{.*}} = %b : {{.*}})
// CHECK-NEXT:   fusion.matmul
// The other iterations: the ring step, then the GEMM on the received shard.
// CHECK:      hir.for %[[I:.*]] = %{{.*}} to %c4 step %c1 {
// CHECK-NEXT:   %[[K:.*]] = arith.remui %[[I]], %num_streams : index
// CHECK-NEXT:   %[[S:.*]] = hir.stream %[[K]]
// CHECK-NEXT:   hir.set_current_stream %[[S]]
// CHECK-NEXT:   %[[T:.*]] = arith.addi %[[I]], %rank : index
// CHECK-NEXT:   %[[D:.*]] = arith.remui %[[T]], %c4 : index
// CHECK-NEXT:   %[[REMOTE:.*]] = arith.cmpi ne, %[[D]], %rank : index
// CHECK-NEXT:   %[[RECEIVED:.*]] = hir.alias_select %[[SLOTS]][%[[D]]] axis 0
// CHECK-NEXT:   scf.if %[[REMOTE]] {
// CHECK-NEXT:     hir.set_current_stream %comm
// CHECK-NEXT:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:     %[[BACK:.*]] = arith.addi %[[D]], %[[C3]] : index
// CHECK-NEXT:     %[[PREVIOUS:.*]] = arith.remui %[[BACK]], %c4 : index
// CHECK-NEXT:     %[[WAS_LOCAL:.*]] = arith.cmpi eq, %[[PREVIOUS]], %rank : index
// CHECK-NEXT:     %[[PREVIOUS_SLOT:.*]] = hir.alias_select %[[SLOTS]][%[[PREVIOUS]]] axis 0
// CHECK-NEXT:     %[[SEND:.*]] = arith.select %[[WAS_LOCAL]], %[[LOCAL]], %[[PREVIOUS_SLOT]]
// CHECK-NEXT:     %[[STEP:.*]] = hir.collective_permute %[[SEND]] into %[[RECEIVED]] offset 3 mesh = [0, 1, 2, 3]
// CHECK-NEXT:     hir.wait %[[STEP]]
// CHECK-NEXT:     hir.set_current_stream %[[S]]
// CHECK-NEXT:     hir.synchronize %comm
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[SHARD:.*]] = arith.select %[[REMOTE]], %[[RECEIVED]], %[[LOCAL]]
// CHECK-NEXT:   %[[OUT:.*]] = hir.alias_select %c[%[[D]]] axis 0
// CHECK-NEXT:   hir.launch ins(%{{.*}} = %[[SHARD]], %{{.*}} = %b : {{.*}}) outs(%[[OUT]] : {{.*}})
// CHECK-NEXT:     fusion.matmul
// The caller's stream joined each worker after its step: nothing waits for the comm stream at the end.
// CHECK:        hir.set_current_stream %main
// CHECK-NEXT:   hir.synchronize %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: func.return %c

// On 2 devices the step's offset is 1, and the shard passed on is always the local one.
// TWO-NOT: hir.broadcast
// TWO:     hir.collective_permute %{{.*}} into %{{.*}} offset 1 mesh = [0, 1]

// A loop over the shards of an inner axis broadcasts into a temporary, not into a slot of the
// loop's buffer: it keeps its broadcasts.
// KEEP-NOT: hir.collective_permute
// KEEP:     hir.broadcast
