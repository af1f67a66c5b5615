// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// fusion.sdpa in a stream loop over the heads or the batch: each iteration attends with its
// slice of queries, keys and values; a mask broadcast over the heads reads its one index.

// CHECK-LABEL: func.func @heads(
// CHECK:       %o = hir.allocate() : memref<2x4x16x6xf32>
// CHECK:       %q_i = hir.alias_select %q[%[[I:[a-z0-9_]+]]] axis 1 : memref<2x4x16x8xf32> -> memref<2x16x8xf32, strided<[512, 8, 1], offset: ?>>
// CHECK-NEXT:  %k_i = hir.alias_select %k[%[[I]]] axis 1 : memref<2x4x12x8xf32> -> memref<2x12x8xf32, strided<[384, 8, 1], offset: ?>>
// CHECK-NEXT:  %v_i = hir.alias_select %v[%[[I]]] axis 1 : memref<2x4x12x6xf32> -> memref<2x12x6xf32, strided<[288, 6, 1], offset: ?>>
// CHECK-NEXT:  %m_i = hir.alias_select %m[%c0] axis 1 : memref<2x1x16x12xf32> -> memref<2x16x12xf32, strided<[192, 12, 1], offset: ?>>
// CHECK-NEXT:  %o_i = hir.alias_select %o[%[[I]]] axis 1 : memref<2x4x16x6xf32> -> memref<2x16x6xf32, strided<[384, 6, 1], offset: ?>>
// CHECK-NEXT:  hir.launch ins(
// CHECK-NEXT:    fusion.sdpa {{%[a-z0-9_]+}}, {{%[a-z0-9_]+}}, {{%[a-z0-9_]+}} mask {{%[a-z0-9_]+}} scale = 1.250000e-01 : tensor<2x16x8xf32>, tensor<2x12x8xf32>, tensor<2x12x6xf32>, tensor<2x16x12xf32> -> tensor<2x16x6xf32>
func.func @heads(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x12x8xf32>, %v: tensor<2x4x12x6xf32>, %m: tensor<2x1x16x12xf32>) -> tensor<2x4x16x6xf32, #fusion.parallel<[serial, stream, serial, serial]>> {
  %o = fusion.sdpa %q, %k, %v mask %m scale = 1.250000e-01 : tensor<2x4x16x8xf32>, tensor<2x4x12x8xf32>, tensor<2x4x12x6xf32>, tensor<2x1x16x12xf32> -> tensor<2x4x16x6xf32, #fusion.parallel<[serial, stream, serial, serial]>>
  func.return %o : tensor<2x4x16x6xf32, #fusion.parallel<[serial, stream, serial, serial]>>
}

// -----

// Chunks of the batch, causal; a [L, S] mask would be read whole by every iteration.
// CHECK-LABEL: func.func @batch_chunks(
// CHECK:       hir.for
// CHECK:       hir.for
// CHECK:         fusion.sdpa {{%[a-z0-9_]+}}, {{%[a-z0-9_]+}}, {{%[a-z0-9_]+}} causal scale = 2.500000e-01 : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x2x8x16xf32>
func.func @batch_chunks(%q: tensor<4x2x8x16xf32>, %k: tensor<4x2x8x16xf32>, %v: tensor<4x2x8x16xf32>) -> tensor<4x2x8x16xf32, #fusion.parallel<[stream(2), serial, serial, serial]>> {
  %o = fusion.sdpa %q, %k, %v causal scale = 2.500000e-01 : tensor<4x2x8x16xf32>, tensor<4x2x8x16xf32>, tensor<4x2x8x16xf32> -> tensor<4x2x8x16xf32, #fusion.parallel<[stream(2), serial, serial, serial]>>
  func.return %o : tensor<4x2x8x16xf32, #fusion.parallel<[stream(2), serial, serial, serial]>>
}
