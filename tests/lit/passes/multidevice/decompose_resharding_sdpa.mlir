// RUN: hir-opt %s --split-input-file -p fusion-propagate-sharding,fusion-decompose-resharding | filecheck %s

// Attention reads the L, S and E axes whole: an operand sharded there is gathered before it
// (a resharding fusion.set to the layout the op consumes), whether the user or
// fusion-propagate-sharding put the didx axis there. The batch and head axes stay sharded.

// The query takes its producer's sharding of the rows (L); the attention gathers it and
// computes the whole (replicated) result.
// CHECK-LABEL: func.func @propagated_rows(
// CHECK:       %q = fusion.relu %x : {{.*}} -> tensor<2x4x16x8xf32, #fusion.parallel<[serial, serial, didx, serial], mesh = [0, 1]>>
// CHECK-NEXT:  %q_gathered = fusion.set %q : tensor<2x4x16x8xf32, #fusion.parallel<[serial, serial, didx, serial], mesh = [0, 1]>> -> tensor<2x4x16x8xf32, #fusion.parallel<[serial, serial, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:  %o = fusion.sdpa %q_gathered, %k, %v causal
func.func @propagated_rows(%x: tensor<2x4x16x8xf32, #fusion.parallel<[serial, serial, didx, serial], mesh = [0, 1]>>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %q = fusion.relu %x : tensor<2x4x16x8xf32, #fusion.parallel<[serial, serial, didx, serial], mesh = [0, 1]>> -> tensor<2x4x16x8xf32>
  %o = fusion.sdpa %q, %k, %v causal scale = 0.25 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  func.return %o : tensor<2x4x16x8xf32>
}

// -----

// Heads sharded: the result takes the heads' sharding forward, nothing is gathered.
// CHECK-LABEL: func.func @propagated_heads(
// CHECK-NOT:   fusion.set
// CHECK:       %o = fusion.sdpa {{.*}} -> tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:  %r = fusion.relu %o : {{.*}} -> tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>
func.func @propagated_heads(%q: tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %k: tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %v: tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> {
  %o = fusion.sdpa %q, %k, %v causal scale = 0.25 : tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x4x16x8xf32>
  %r = fusion.relu %o : tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>
  func.return %r : tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>
}
