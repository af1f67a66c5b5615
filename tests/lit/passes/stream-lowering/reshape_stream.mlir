// RUN: hir-opt %s --split-input-file -p fusion-segment,convert-fusion-to-hir,hir-loop-fusion,cse | filecheck %s

// A stream axis split or merged by fusion.reshape: each iteration reads one slice of the operand
// (shape_rules.reshape_slicing) and reshapes it; loop fusion keeps the loops of the same slices
// together. The refusals: model_ops_invalid.mlir.

// Split, stream on the outer factor: iteration i reads chunk i of 4 of the 32 rows; the exp
// runs in the same loop.
// CHECK-LABEL: func.func @split_outer
// CHECK:       hir.stream_for %i = %c0 to %c4 step %c1
// CHECK-NEXT:    %x_i = hir.alias_chunk %x[%i] axis 0 chunks 4 : memref<32x16xf32> -> memref<8x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:    %e_i = hir.alias_select %e[%i] axis 0 : memref<4x8x16xf32> -> memref<8x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:    hir.launch ins(%x_1 = %x_i : {{.*}}) outs(%e_i : {{.*}}) {
// CHECK-NEXT:      %r = fusion.reshape %x_1 : tensor<8x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT:      %e_1 = fusion.exp %r : tensor<8x16xf32> -> tensor<8x16xf32>
func.func @split_outer(%x: tensor<32x16xf32>) -> tensor<4x8x16xf32, #fusion.parallel<[stream, serial, serial]>> {
  %r = fusion.reshape %x : tensor<32x16xf32> -> tensor<4x8x16xf32, #fusion.parallel<[stream, serial, serial]>>
  %e = fusion.exp %r : tensor<4x8x16xf32, #fusion.parallel<[stream, serial, serial]>> -> tensor<4x8x16xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %e : tensor<4x8x16xf32, #fusion.parallel<[stream, serial, serial]>>
}

// -----

// Split, stream(2) on the outer factor 4: chunk i of 2 of the 32 rows.
// CHECK-LABEL: func.func @split_outer_chunks
// CHECK:       hir.stream_for %i = %c0 to %c2 step %c1
// CHECK-NEXT:    %x_i = hir.alias_chunk %x[%i] axis 0 chunks 2 : memref<32x16xf32> -> memref<16x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:    %r_i = hir.alias_chunk %r[%i] axis 0 chunks 2 : memref<4x8x16xf32> -> memref<2x8x16xf32, strided<[128, 16, 1], offset: ?>>
// CHECK:           fusion.reshape %x_1 : tensor<16x16xf32> -> tensor<2x8x16xf32>
func.func @split_outer_chunks(%x: tensor<32x16xf32>) -> tensor<4x8x16xf32, #fusion.parallel<[stream(2), serial, serial]>> {
  %r = fusion.reshape %x : tensor<32x16xf32> -> tensor<4x8x16xf32, #fusion.parallel<[stream(2), serial, serial]>>
  func.return %r : tensor<4x8x16xf32, #fusion.parallel<[stream(2), serial, serial]>>
}

// -----

// Merge, stream on the merged 32 = 4x8: iteration i reads operand index (i / 8, i mod 8), one
// select per merged axis.
// CHECK-LABEL: func.func @merge
// CHECK:       hir.stream_for %i = %c0 to %c32 step %c1
// CHECK-NEXT:    %[[Q:.+]] = arith.divui %i, %c8 : index
// CHECK-NEXT:    %[[ROW:.+]] = hir.alias_select %x[%[[Q]]] axis 0 : memref<4x8x16xf32> -> memref<8x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:    %[[R:.+]] = arith.remui %i, %c8 : index
// CHECK-NEXT:    %x_i = hir.alias_select %[[ROW]][%[[R]]] axis 0 : memref<8x16xf32, strided<[16, 1], offset: ?>> -> memref<16xf32, strided<[1], offset: ?>>
// CHECK-NEXT:    %e_i = hir.alias_select %e[%i] axis 0 : memref<32x16xf32> -> memref<16xf32, strided<[1], offset: ?>>
// CHECK:           %r = fusion.reshape %x_1 : tensor<16xf32> -> tensor<16xf32>
// CHECK-NEXT:      %e_1 = fusion.exp %r : tensor<16xf32> -> tensor<16xf32>
func.func @merge(%x: tensor<4x8x16xf32>) -> tensor<32x16xf32, #fusion.parallel<[stream, serial]>> {
  %r = fusion.reshape %x : tensor<4x8x16xf32> -> tensor<32x16xf32, #fusion.parallel<[stream, serial]>>
  %e = fusion.exp %r : tensor<32x16xf32, #fusion.parallel<[stream, serial]>> -> tensor<32x16xf32, #fusion.parallel<[stream, serial]>>
  func.return %e : tensor<32x16xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// Merge of inner axes (48 = 6x8), three digits for 24 = 2x3x4.
// CHECK-LABEL: func.func @merge_inner
// CHECK:       hir.stream_for %i = %c0 to %c48 step %c1
// CHECK-NEXT:    %[[Q:.+]] = arith.divui %i, %c8 : index
// CHECK-NEXT:    %[[ROW:.+]] = hir.alias_select %x[%[[Q]]] axis 1 : memref<4x6x8xf32> -> memref<4x8xf32, strided<[48, 1], offset: ?>>
// CHECK-NEXT:    %[[R:.+]] = arith.remui %i, %c8 : index
// CHECK-NEXT:    %x_i = hir.alias_select %[[ROW]][%[[R]]] axis 1 : memref<4x8xf32, strided<[48, 1], offset: ?>> -> memref<4xf32, strided<[48], offset: ?>>
// CHECK:           fusion.reshape %x_1 : tensor<4xf32> -> tensor<4xf32>
func.func @merge_inner(%x: tensor<4x6x8xf32>) -> tensor<4x48xf32, #fusion.parallel<[serial, stream]>> {
  %y = fusion.reshape %x : tensor<4x6x8xf32> -> tensor<4x48xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x48xf32, #fusion.parallel<[serial, stream]>>
}

// -----

// CHECK-LABEL: func.func @merge_three
// CHECK:       hir.stream_for %i = %c0 to %c24 step %c1
// CHECK-NEXT:    %[[D0:.+]] = arith.divui %i, %c12 : index
// CHECK-NEXT:    %[[V0:.+]] = hir.alias_select %x[%[[D0]]] axis 0 : memref<2x3x4x5xf32>
// CHECK-NEXT:    %[[Q1:.+]] = arith.divui %i, %c4 : index
// CHECK-NEXT:    %[[D1:.+]] = arith.remui %[[Q1]], %c3 : index
// CHECK-NEXT:    %[[V1:.+]] = hir.alias_select %[[V0]][%[[D1]]] axis 0 : memref<3x4x5xf32
// CHECK-NEXT:    %[[D2:.+]] = arith.remui %i, %c4 : index
// CHECK-NEXT:    %x_i = hir.alias_select %[[V1]][%[[D2]]] axis 0 : memref<4x5xf32, {{.*}}> -> memref<5xf32, strided<[1], offset: ?>>
func.func @merge_three(%x: tensor<2x3x4x5xf32>) -> tensor<24x5xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.reshape %x : tensor<2x3x4x5xf32> -> tensor<24x5xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<24x5xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// Merge, stream(2) on 32 = 4x8: 2 divides 4, so chunk i holds whole rows of axis 0.
// CHECK-LABEL: func.func @merge_chunks
// CHECK:       hir.stream_for %i = %c0 to %c2 step %c1
// CHECK-NEXT:    %x_i = hir.alias_chunk %x[%i] axis 0 chunks 2 : memref<4x8x16xf32> -> memref<2x8x16xf32, strided<[128, 16, 1], offset: ?>>
// CHECK-NEXT:    %r_i = hir.alias_chunk %r[%i] axis 0 chunks 2 : memref<32x16xf32> -> memref<16x16xf32, strided<[16, 1], offset: ?>>
// CHECK:           fusion.reshape %x_1 : tensor<2x8x16xf32> -> tensor<16x16xf32>
func.func @merge_chunks(%x: tensor<4x8x16xf32>) -> tensor<32x16xf32, #fusion.parallel<[stream(2), serial]>> {
  %r = fusion.reshape %x : tensor<4x8x16xf32> -> tensor<32x16xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %r : tensor<32x16xf32, #fusion.parallel<[stream(2), serial]>>
}

// -----

// Split, exp, merge back, all stream(4): the reshape back is a unit of its own (its axis map
// does not follow the stream axis), and its loop reads the chunks the first loop wrote, so the
// loops fuse.
// CHECK-LABEL: func.func @chain
// CHECK:       hir.stream_for %i = %c0 to %c4 step %c1
// CHECK-NEXT:    %x_i = hir.alias_chunk %x[%i] axis 0 chunks 4 : memref<32x16xf32>
// CHECK-NEXT:    %e_i = hir.alias_chunk %e[%i] axis 0 chunks 4 : memref<4x8x16xf32>
// CHECK:           fusion.exp
// CHECK:         %b_i = hir.alias_chunk %b[%i] axis 0 chunks 4 : memref<32x16xf32>
// CHECK-NEXT:    hir.launch ins(%e_1 = %e_i : {{.*}}) outs(%b_i : {{.*}}) {
// CHECK-NEXT:      fusion.reshape %e_1 : tensor<1x8x16xf32> -> tensor<8x16xf32>
// CHECK-NOT:   hir.stream_for
func.func @chain(%x: tensor<32x16xf32>) -> tensor<32x16xf32, #fusion.parallel<[stream(4), serial]>> {
  %r = fusion.reshape %x : tensor<32x16xf32> -> tensor<4x8x16xf32, #fusion.parallel<[stream(4), serial, serial]>>
  %e = fusion.exp %r : tensor<4x8x16xf32, #fusion.parallel<[stream(4), serial, serial]>> -> tensor<4x8x16xf32, #fusion.parallel<[stream(4), serial, serial]>>
  %b = fusion.reshape %e : tensor<4x8x16xf32, #fusion.parallel<[stream(4), serial, serial]>> -> tensor<32x16xf32, #fusion.parallel<[stream(4), serial]>>
  func.return %b : tensor<32x16xf32, #fusion.parallel<[stream(4), serial]>>
}

// -----

// Four iterations each, but the exp's loop writes %e by index i of axis 0 and the merge's loop
// reads it by chunk i of 4: different views of %e, so the loops stay apart.
// Index i of %e and chunk i of its 4 chunks along the same axis are the same memory: one loop.
// CHECK-LABEL: func.func @select_then_chunk
// CHECK:       hir.stream_for %i = %c0 to %c4 step %c1
// CHECK-NEXT:    %x_i = hir.alias_select %x[%i] axis 0
// CHECK-NEXT:    %e_i = hir.alias_select %e[%i] axis 0
// CHECK-NOT:   hir.stream_for
// CHECK:         %e_i_1 = hir.alias_chunk %e[%i] axis 0 chunks 4
// CHECK:       func.return
func.func @select_then_chunk(%x: tensor<4x8x16xf32>) -> tensor<32x16xf32, #fusion.parallel<[stream(4), serial]>> {
  %e = fusion.exp %x : tensor<4x8x16xf32> -> tensor<4x8x16xf32, #fusion.parallel<[stream, serial, serial]>>
  %b = fusion.reshape %e : tensor<4x8x16xf32, #fusion.parallel<[stream, serial, serial]>> -> tensor<32x16xf32, #fusion.parallel<[stream(4), serial]>>
  func.return %b : tensor<32x16xf32, #fusion.parallel<[stream(4), serial]>>
}
