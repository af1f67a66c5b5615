// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// stream(N) need not divide the extent of its axis: each chunk has ceil(extent/N) elements, the
// last ones fewer (hir.alias_chunk's result then has a dynamic extent on that axis).

// 6 rows in 4 chunks: 2, 2, 2 and 0 rows; the empty chunk is not iterated (3 iterations).
// CHECK-LABEL: func.func @rows
// CHECK:         hir.for %{{.*}} = %c0 to %c3 step %c1 {
// CHECK:         hir.for %[[I:.*]] = %c0 to %c3 step %c1 {
// CHECK:           %x_i = hir.alias_chunk %x[%[[I]]] axis 0 chunks 4 : memref<6x8xf32> -> memref<?x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_chunk %y[%[[I]]] axis 0 chunks 4 : memref<6x8xf32> -> memref<?x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%{{.*}} = %x_i : memref<?x8xf32, strided<[8, 1], offset: ?>>) outs(%y_i : memref<?x8xf32, strided<[8, 1], offset: ?>>) {
// CHECK-NEXT:        fusion.set %{{.*}} : tensor<?x8xf32> -> tensor<?x8xf32>
func.func @rows(%x: tensor<6x8xf32>) -> tensor<6x8xf32, #fusion.parallel<[stream(4), serial]>> {
  %y = fusion.set %x : tensor<6x8xf32> -> tensor<6x8xf32, #fusion.parallel<[stream(4), serial]>>
  func.return %y : tensor<6x8xf32, #fusion.parallel<[stream(4), serial]>>
}

// -----

// 8 columns in 3 chunks: 3, 3 and 2 columns, strided views.
// CHECK-LABEL: func.func @inner_axis
// CHECK:           %x_i = hir.alias_chunk %x[%{{.*}}] axis 1 chunks 3 : memref<6x8xf32> -> memref<6x?xf32, strided<[8, 1], offset: ?>>
// CHECK:             fusion.exp %{{.*}} : tensor<6x?xf32> -> tensor<6x?xf32>
func.func @inner_axis(%x: tensor<6x8xf32>) -> tensor<6x8xf32, #fusion.parallel<[serial, stream(3)]>> {
  %y = fusion.exp %x : tensor<6x8xf32> -> tensor<6x8xf32, #fusion.parallel<[serial, stream(3)]>>
  func.return %y : tensor<6x8xf32, #fusion.parallel<[serial, stream(3)]>>
}

// -----

// More chunks than rows, up to int64's largest: one iteration per row, not one per chunk.
// CHECK-LABEL: func.func @more_chunks_than_rows
// CHECK:         hir.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK:         hir.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK:           hir.alias_chunk %x[%[[I]]] axis 0 chunks 9223372036854775807 : memref<4x8xf32> -> memref<?x8xf32, strided<[8, 1], offset: ?>>
func.func @more_chunks_than_rows(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream(9223372036854775807), serial]>> {
  %y = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream(9223372036854775807), serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream(9223372036854775807), serial]>>
}

// -----

// A dynamic extent: the chunks are computed at run time the same way.

// CHECK-LABEL: func.func @dynamic(
// CHECK: hir.alias_chunk
func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32, #fusion.parallel<[stream(4), serial]>> {
  %y = fusion.set %x : tensor<?x8xf32> -> tensor<?x8xf32, #fusion.parallel<[stream(4), serial]>>
  func.return %y : tensor<?x8xf32, #fusion.parallel<[stream(4), serial]>>
}
