// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// A collective concatenates contiguous buffers along their outermost axis. When the gathered axis
// is inner (or the target a strided chunk of an inner stream axis), the lowering gathers into a
// contiguous temporary with that axis first (%shard, %gathered) and permute-copies it into place,
// as nvFuser transposes around an inner-axis all-gather.

// CHECK-LABEL: func.func @inner_axis
// CHECK:         %y = hir.allocate() : memref<8x2x16xf32>
// CHECK-NEXT:    %shard = hir.allocate() : memref<1x8x16xf32>
// CHECK-NEXT:    hir.launch ins(%[[X:.*]] = %x : memref<8x1x16xf32>) outs(%shard : memref<1x8x16xf32>) {
// CHECK-NEXT:      fusion.permute %[[X]] perm = [1, 0, 2] : tensor<8x1x16xf32> -> tensor<1x8x16xf32>
// CHECK:         %gathered = hir.allocate() : memref<2x8x16xf32>
// CHECK-NEXT:    %[[W:.*]] = hir.allgather %shard into %gathered axis 0 mesh = [0, 1] : memref<1x8x16xf32>, memref<2x8x16xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    hir.launch ins(%[[G:.*]] = %gathered : memref<2x8x16xf32>) outs(%y : memref<8x2x16xf32>) {
// CHECK-NEXT:      fusion.permute %[[G]] perm = [1, 0, 2] : tensor<2x8x16xf32> -> tensor<8x2x16xf32>

func.func @inner_axis(%x: tensor<8x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>) -> tensor<8x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<8x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<8x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<8x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
}

// -----

// AG+GEMM with the stream axis inside the didx axis: chunk i of the gathered A is a strided view.
// The shard of chunk i is contiguous (its axis of extent 1 comes first), so only the target goes
// through a temporary, copied into the strided chunk before the matmul reads it. (The chunk then
// becomes a contiguous ring slot, hir-ring-intermediates: the temporary, chosen before, stays.)

// CHECK-LABEL: func.func @stream_inside_didx
// CHECK:         hir.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK:         hir.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK:           %a_i = hir.alias_select %a[%[[J]]] axis 1 : memref<1x4x8x16xf32> -> memref<1x8x16xf32, strided<[512, 16, 1], offset: ?>>
// CHECK-NEXT:      %[[T:.*]] = hir.alias_select %a_gathered[%{{k_[0-9]+}}] axis 0 : memref<?x2x8x16xf32> -> memref<2x8x16xf32, strided<[128, 16, 1], offset: ?>>
// CHECK-NEXT:      %gathered = hir.allocate() : memref<2x8x16xf32>
// CHECK-NEXT:      %[[W:.*]] = hir.allgather %a_i into %gathered axis 0 mesh = [0, 1]
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.launch ins(%[[G:.*]] = %gathered : memref<2x8x16xf32>) outs(%[[T]] : memref<2x8x16xf32, strided<[128, 16, 1], offset: ?>>) {
// CHECK-NEXT:        fusion.set %[[G]] : tensor<2x8x16xf32> -> tensor<2x8x16xf32>
// CHECK:           fusion.matmul

func.func @stream_inside_didx(%a: tensor<2x4x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>, %b: tensor<16x32xf32>) -> tensor<2x4x8x32xf32, #fusion.parallel<[serial, stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x4x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>, tensor<16x32xf32> -> tensor<2x4x8x32xf32, #fusion.parallel<[serial, stream, serial, serial]>>
  func.return %c : tensor<2x4x8x32xf32, #fusion.parallel<[serial, stream, serial, serial]>>
}

// -----

// stream(2): each chunk has an axis of extent 2 before the gathered one: both sides are permuted.

// CHECK-LABEL: func.func @chunk_of_two
// CHECK:           %shard = hir.allocate() : memref<1x2x8x16xf32>
// CHECK:             fusion.permute %{{.*}} perm = [1, 0, 2, 3] : tensor<2x1x8x16xf32> -> tensor<1x2x8x16xf32>
// CHECK:           %gathered = hir.allocate() : memref<2x2x8x16xf32>
// CHECK-NEXT:      %[[W:.*]] = hir.allgather %shard into %gathered axis 0 mesh = [0, 1] : memref<1x2x8x16xf32>, memref<2x2x8x16xf32>
// CHECK:             fusion.permute %{{.*}} perm = [1, 0, 2, 3] : tensor<2x2x8x16xf32> -> tensor<2x2x8x16xf32>
// CHECK:           fusion.matmul

func.func @chunk_of_two(%a: tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<16x32xf32>) -> tensor<4x2x8x32xf32, #fusion.parallel<[stream(2), serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<16x32xf32> -> tensor<4x2x8x32xf32, #fusion.parallel<[stream(2), serial, serial, serial]>>
  func.return %c : tensor<4x2x8x32xf32, #fusion.parallel<[stream(2), serial, serial, serial]>>
}

// -----

// A loop over the shards of an inner axis (didx axis 1 -> stream axis 1): iteration i's
// broadcast from device i lands in a contiguous temporary, copied into the strided view (which
// then becomes a contiguous ring slot).

// CHECK-LABEL: func.func @shard_loop_inner_axis
// CHECK:         hir.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK:         hir.for %[[J:.*]] = %c0 to %c2 step %c1 {
// CHECK:           %x_i = hir.alias_select %x[%c0] axis 1 : memref<6x1x6xf32> -> memref<6x6xf32, strided<[6, 1], offset: ?>>
// CHECK-NEXT:      %[[T:.*]] = hir.alias_select %x_gathered[%{{k_[0-9]+}}] axis 0 : memref<?x6x6xf32> -> memref<6x6xf32, strided<[6, 1], offset: ?>>
// CHECK-NEXT:      %received = hir.allocate() : memref<6x6xf32>
// CHECK-NEXT:      %[[W:.*]] = hir.broadcast %x_i into %received root %[[J]] mesh = [0, 1]
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.launch ins(%{{.*}} = %received : memref<6x6xf32>) outs(%[[T]] : memref<6x6xf32, strided<[6, 1], offset: ?>>)
// CHECK:           fusion.linear

func.func @shard_loop_inner_axis(%x: tensor<6x2x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, %w: tensor<6xf32>) -> tensor<6x2xf32, #fusion.parallel<[serial, stream], mesh = [0, 1]>> {
  %y = fusion.linear %x, %w : tensor<6x2x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, tensor<6xf32> -> tensor<6x2xf32, #fusion.parallel<[serial, stream], mesh = [0, 1]>>
  func.return %y : tensor<6x2xf32, #fusion.parallel<[serial, stream], mesh = [0, 1]>>
}
