// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// An op that makes its stream(N) axis (a fusion.full, a broadcast's new axis) needs the extent of
// each chunk, which uneven chunks (5 rows in 2 chunks of 3 and 2) do not have in the IR (`?`): a
// bare op of that kind runs whole, once, into the whole buffer, and its consumers stream as usual.
// With chunks that divide the extent it streams (`@full_even`).

// CHECK-LABEL: func.func @full_uneven
// CHECK-NOT:     hir.for
// CHECK:         %[[B:.*]] = hir.allocate() : memref<5x2xf32>
// CHECK-NEXT:    hir.launch ins() outs(%[[B]] : memref<5x2xf32>) {
// CHECK-NEXT:      fusion.full -1.500000e+00 : tensor<5x2xf32>
// CHECK-NOT:     hir.for
// CHECK:         func.return %[[B]]
func.func @full_uneven() -> tensor<5x2xf32, #fusion.parallel<[stream(2), serial]>> {
  %a = fusion.full -1.5 : tensor<5x2xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %a : tensor<5x2xf32, #fusion.parallel<[stream(2), serial]>>
}

// -----

// CHECK-LABEL: func.func @broadcast_uneven
// CHECK:         hir.launch ins(%{{.*}} = %x : memref<3xf32>) outs(%[[B:.*]] : memref<5x3xf32>) {
// CHECK-NEXT:      fusion.broadcast %{{.*}} dims = [0] : tensor<3xf32> -> tensor<5x3xf32>
// CHECK:         hir.for
// CHECK:         hir.for
// CHECK:           hir.alias_chunk %[[B]][%{{.*}}] axis 0 chunks 2
// CHECK:             fusion.mul
func.func @broadcast_uneven(%x: tensor<3xf32>, %y: tensor<5x3xf32>) -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>> {
  %b = fusion.broadcast %x dims = [0] : tensor<3xf32> -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
  %c = fusion.mul %b, %y : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>, tensor<5x3xf32> -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %c : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
}

// -----

// CHECK-LABEL: func.func @full_even
// CHECK:         hir.for
// CHECK:         hir.for
// CHECK:           fusion.full 2.000000e+00 : tensor<2x2xf32>
func.func @full_even() -> tensor<4x2xf32, #fusion.parallel<[stream(2), serial]>> {
  %a = fusion.full 2.0 : tensor<4x2xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %a : tensor<4x2xf32, #fusion.parallel<[stream(2), serial]>>
}

// -----

// fusion-segment keeps such an op out of segments, under every policy: the broadcast runs whole,
// the mul and the exp in one segment streamed in chunks.
// RUN: hir-opt %s --split-input-file -p 'fusion-segment{policy=resharding-only}' | filecheck %s --check-prefix=SEG
// SEG-LABEL: func.func @kept_out_of_segments
// SEG-NEXT:    %b = fusion.broadcast %x dims = [0]
// SEG-NEXT:    %e = fusion.segment ins(%b_1 = %b, %y_1 = %y
// SEG-NEXT:      fusion.mul %b_1, %y_1
// SEG-NEXT:      fusion.exp
func.func @kept_out_of_segments(%x: tensor<3xf32>, %y: tensor<5x3xf32>) -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>> {
  %b = fusion.broadcast %x dims = [0] : tensor<3xf32> -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
  %c = fusion.mul %b, %y : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>, tensor<5x3xf32> -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
  %e = fusion.exp %c : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>> -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %e : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
}
