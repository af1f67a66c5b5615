// RUN: hir-opt %s --stream-lowering | filecheck %s

// Attention with the heads sharded over the mesh and the batch streamed: every device attends
// with its own heads, so there is no communication, only the stream loop over the batch.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:  %q: memref<2x2x16x8xf32>
// CHECK-NOT:   hir.allgather
// CHECK:       %q_i = hir.alias_select %q[%[[I:[a-z0-9_]+]]] axis 0 : memref<2x2x16x8xf32> -> memref<2x16x8xf32, strided<[128, 8, 1], offset: ?>>
// CHECK:       fusion.sdpa {{%[a-z0-9_]+}}, {{%[a-z0-9_]+}}, {{%[a-z0-9_]+}} causal scale = 3.500000e-01 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
// CHECK-NOT:   hir.allgather
// CHECK-NOT:   hir.allreduce
// CHECK:       func.return %o : memref<2x2x16x8xf32>
func.func @main(%q: tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %k: tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %v: tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x4x16x8xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> {
  %o = fusion.sdpa %q, %k, %v causal scale = 0.35 : tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x4x16x8xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %o : tensor<2x4x16x8xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}
