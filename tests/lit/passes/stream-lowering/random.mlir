// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// fusion.random in a stream loop: its axes are made, not read, so each iteration draws its own
// slice into the result's view. A draw has effects (the generator's state): hir-loop-fusion fuses
// the loops of the two draws, keeps them apart from the pure loops after them, and cse keeps the
// two draws of one shape apart.

// CHECK-LABEL: func.func @dropout_rows(
// CHECK:       hir.for
// CHECK:         %u_i = hir.alias_select %u[{{%[a-z0-9_]+}}] axis 0 : memref<8x16xf32> -> memref<16xf32, strided<[1], offset: ?>>
// CHECK-NEXT:    hir.launch ins() outs(%u_i : memref<16xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:      fusion.random uniform : tensor<16xf32>
// CHECK:         %v_i = hir.alias_select %v[{{%[a-z0-9_]+}}] axis 0
// CHECK-NEXT:    hir.launch ins() outs(%v_i
// CHECK-NEXT:      fusion.random uniform : tensor<16xf32>
// CHECK:         hir.set_current_stream %main
// CHECK-NOT:     fusion.compare
// CHECK:       }
// CHECK:       hir.for
// CHECK:         fusion.compare lt
// CHECK:         fusion.where
func.func @dropout_rows(%x: tensor<8x16xf32>) -> tensor<8x16xf32, #fusion.parallel<[stream, serial]>> {
  %u = fusion.random uniform : tensor<8x16xf32, #fusion.parallel<[stream, serial]>>
  %v = fusion.random uniform : tensor<8x16xf32, #fusion.parallel<[stream, serial]>>
  %p = fusion.full 5.000000e-01 : tensor<f32>
  %pb = fusion.broadcast %p dims = [0, 1] : tensor<f32> -> tensor<8x16xf32, #fusion.parallel<[stream, serial]>>
  %keep = fusion.compare lt, %u, %v : tensor<8x16xf32, #fusion.parallel<[stream, serial]>>, tensor<8x16xf32, #fusion.parallel<[stream, serial]>> -> tensor<8x16xi1, #fusion.parallel<[stream, serial]>>
  %xs = fusion.set %x : tensor<8x16xf32> -> tensor<8x16xf32, #fusion.parallel<[stream, serial]>>
  %y = fusion.where %keep, %xs, %pb : tensor<8x16xi1, #fusion.parallel<[stream, serial]>>, tensor<8x16xf32, #fusion.parallel<[stream, serial]>>, tensor<8x16xf32, #fusion.parallel<[stream, serial]>> -> tensor<8x16xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<8x16xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// stream(2) chunks: each chunk draws its half.
// CHECK-LABEL: func.func @chunks(
// CHECK:       %r_i = hir.alias_chunk %r[{{%[a-z0-9_]+}}] axis 0 chunks 2
// CHECK:       fusion.random normal : tensor<2x8xf32>
func.func @chunks() -> tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>> {
  %r = fusion.random normal : tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
}
