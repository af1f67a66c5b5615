// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// A broadcast's new axis in stream(2) chunks, on a value sharded over a mesh: each chunk is the
// broadcast of the device's whole shard. The check that a chunk computes its slice compares the
// op's axes with those of a probe on local types, where the didx axis has extent 1 (D = 2, one
// row per device); both sides use the probe's extents, so the sharded axis is not taken for a
// lost one.

// CHECK-LABEL: func.func @new_axis_chunks(
// CHECK:       hir.for
// CHECK:         %v_i = hir.alias_chunk %v[{{%[a-z0-9_]+}}] axis 1 chunks 2 : memref<1x4x4x4xi1> -> memref<1x2x4x4xi1, strided<[64, 16, 4, 1], offset: ?>>
// CHECK-NEXT:    hir.launch ins({{%[a-z0-9_]+}} = %x : memref<1x4x4xi1>) outs(%v_i :
// CHECK-NEXT:      fusion.broadcast {{%[a-z0-9_]+}} dims = [1] : tensor<1x4x4xi1> -> tensor<1x2x4x4xi1>
func.func @new_axis_chunks(%x: tensor<2x4x4xi1, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x4x4x4xi1, #fusion.parallel<[didx, stream(2), serial, serial], mesh = [0, 1]>> {
  %v = fusion.broadcast %x dims = [1] : tensor<2x4x4xi1, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x4x4x4xi1, #fusion.parallel<[didx, stream(2), serial, serial], mesh = [0, 1]>>
  func.return %v : tensor<2x4x4x4xi1, #fusion.parallel<[didx, stream(2), serial, serial], mesh = [0, 1]>>
}

// -----

// The same with a float value and the new axis in front of the sharded one.
// CHECK-LABEL: func.func @leading_new_axis(
// CHECK:       hir.alias_chunk %v[{{%[a-z0-9_]+}}] axis 0 chunks 2 : memref<4x1x8xf32>
// CHECK:       fusion.broadcast {{%[a-z0-9_]+}} dims = [0] : tensor<1x8xf32> -> tensor<2x1x8xf32>
func.func @leading_new_axis(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4x2x8xf32, #fusion.parallel<[stream(2), didx, serial], mesh = [0, 1]>> {
  %v = fusion.broadcast %x dims = [0] : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4x2x8xf32, #fusion.parallel<[stream(2), didx, serial], mesh = [0, 1]>>
  func.return %v : tensor<4x2x8xf32, #fusion.parallel<[stream(2), didx, serial], mesh = [0, 1]>>
}
