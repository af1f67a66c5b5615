// RUN: hir-opt %s --split-input-file -p fusion-decompose-resharding | filecheck %s
// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s --check-prefix=LOWERED

// An op that reduces or contracts its operand's didx axis (other than a sum, whose partial sums
// an all-reduce combines) needs every device's shard: fusion-decompose-resharding gathers the
// operand first, and the op then computes on the whole operand.

// CHECK-LABEL: func.func @max_over_didx
// CHECK:         %x_gathered = fusion.set %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %m = fusion.max %x_gathered dims = [0]
// LOWERED-LABEL: func.func @max_over_didx
// LOWERED:         %[[W:.*]] = hir.allgather %x into %x_gathered axis 0 mesh = [0, 1] : memref<1x8xf32>, memref<2x8xf32>
// LOWERED-NEXT:    hir.wait %[[W]]
// LOWERED:           fusion.max %{{.*}} dims = [0] : tensor<2x8xf32> -> tensor<8xf32>

func.func @max_over_didx(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>> {
  %m = fusion.max %x dims = [0] : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  func.return %m : tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
}

// -----

// A linear contracting a sharded K axis, streamed on M: chunk i of X is gathered in the loop.
// CHECK-LABEL: func.func @linear_sharded_k
// CHECK:         %x_gathered = fusion.set %x : tensor<4x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> -> tensor<4x2xf32, #fusion.parallel<[stream(2), serial], mesh = [0, 1]>>
// CHECK-NEXT:    %y = fusion.linear %x_gathered, %w
// LOWERED-LABEL: func.func @linear_sharded_k
// LOWERED:         hir.for
// LOWERED:         hir.for
// LOWERED:           %x_i = hir.alias_chunk %x[%{{.*}}] axis 0 chunks 2 : memref<4x1xf32> -> memref<2x1xf32, strided<[1, 1], offset: ?>>
// LOWERED:           %shard = hir.allocate() : memref<1x2xf32>
// LOWERED:           %[[W:.*]] = hir.allgather %shard into %gathered axis 0 mesh = [0, 1] : memref<1x2xf32>, memref<2x2xf32>
// LOWERED:           fusion.linear

func.func @linear_sharded_k(%x: tensor<4x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, %w: tensor<6x2xf32>) -> tensor<4x6xf32, #fusion.parallel<[stream(2), serial], mesh = [0, 1]>> {
  %y = fusion.linear %x, %w : tensor<4x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, tensor<6x2xf32> -> tensor<4x6xf32, #fusion.parallel<[stream(2), serial], mesh = [0, 1]>>
  func.return %y : tensor<4x6xf32, #fusion.parallel<[stream(2), serial], mesh = [0, 1]>>
}

// -----

// A sum over the didx axis stays a communication (a local partial sum, then an all-reduce).
// CHECK-LABEL: func.func @partial_sum
// CHECK-NOT:     fusion.set
// CHECK:         fusion.sum %x dims = [0]

func.func @partial_sum(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>> {
  %m = fusion.sum %x dims = [0] : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  func.return %m : tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
}
