// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// A sum over the didx axis whose result's didx axis is the operand's stream axis (reduce-based
// GEMM + reduce-scatter): one loop over the mesh, fused with the producer's; iteration i reduces
// chunk i to device i (hir.reduce root %i) and waits for it on the iteration's stream. No
// reduce-scatter after the loop.

// CHECK-LABEL: func.func @matmul_reduce
// CHECK:         %[[C:.*]] = hir.allocate() : memref<1x8x4xf32>
// CHECK:         hir.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK:         hir.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:      %[[K:.*]] = arith.remui %[[I]], %num_streams : index
// CHECK-NEXT:      %[[S:.*]] = hir.stream %[[K]]
// CHECK-NEXT:      hir.set_current_stream %[[S]]
// CHECK-NEXT:      %a_i = hir.alias_select %a[%[[I]]] axis 1 : memref<1x2x8x16xf32> -> memref<1x8x16xf32, strided<[256, 16, 1], offset: ?>>
// CHECK-NEXT:      %b_i = hir.alias_select %b[%c0] axis 1
// CHECK-NEXT:      %cu_i = hir.alias_select %cu[%[[K]]] axis 0 : memref<?x1x8x4xf32> -> memref<1x8x4xf32, strided<[32, 4, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%{{.*}} = %a_i, %{{.*}} = %b_i : {{.*}}) outs(%cu_i : {{.*}}) {
// CHECK-NEXT:        fusion.matmul
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[W:.*]] = hir.reduce sum %cu_i into %[[C]] root %[[I]] mesh = [0, 1] : memref<1x8x4xf32, strided<[32, 4, 1], offset: ?>>, memref<1x8x4xf32>
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]] : memref<1x8x4xf32>

func.func @matmul_reduce(%a: tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>,
                         %b: tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %cu = fusion.matmul %a, %b : tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>, tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x4xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %cu dims = [0] : tensor<2x2x8x4xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}

// -----

// The chunk is not laid out as the output (an inner stream axis, the result's didx axis 1): a
// local sum into a contiguous temporary, reduced into the output without its extent-1 didx axis.

// CHECK-LABEL: func.func @inner_stream_axis
// CHECK:         %[[C:.*]] = hir.allocate() : memref<8x1x4xf32>
// CHECK:         hir.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK:         hir.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK:           %x_i = hir.alias_select %x[%[[I]]] axis 2 : memref<1x8x2x4xf32> -> memref<1x8x4xf32, strided<[64, 8, 1], offset: ?>>
// CHECK-NEXT:      %mine = hir.alias_select %[[C]][%c0] axis 1 : memref<8x1x4xf32> -> memref<8x4xf32, strided<[4, 1], offset: ?>>
// CHECK-NEXT:      %partial = hir.allocate() : memref<8x4xf32>
// CHECK-NEXT:      hir.launch ins(%{{.*}} = %x_i : {{.*}}) outs(%partial : memref<8x4xf32>) {
// CHECK-NEXT:        fusion.sum %{{.*}} dims = [0] : tensor<1x8x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[W:.*]] = hir.reduce sum %partial into %mine root %[[I]] mesh = [0, 1] : memref<8x4xf32>, memref<8x4xf32, strided<[4, 1], offset: ?>>
// CHECK-NEXT:      hir.wait %[[W]]

func.func @inner_stream_axis(%x: tensor<2x8x2x4xf32, #fusion.parallel<[didx, serial, stream, serial], mesh = [0, 1]>>)
    -> tensor<8x2x4xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  %c = fusion.sum %x dims = [0] : tensor<2x8x2x4xf32, #fusion.parallel<[didx, serial, stream, serial], mesh = [0, 1]>> -> tensor<8x2x4xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %c : tensor<8x2x4xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}

// -----

// A sum that also reduces a local axis: the local sum over both (numbered in the chunk) first.

// CHECK-LABEL: func.func @more_axes
// CHECK:         hir.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK:         hir.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK:           %partial = hir.allocate() : memref<8xf32>
// CHECK-NEXT:      hir.launch
// CHECK-NEXT:        fusion.sum %{{.*}} dims = [0, 2] : tensor<1x8x4xf32> -> tensor<8xf32>
// CHECK:           %[[W:.*]] = hir.reduce sum %partial into %mine root %[[I]] mesh = [0, 1, 2, 3] : memref<8xf32>, memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.wait %[[W]]

func.func @more_axes(%x: tensor<4x4x8x4xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>>)
    -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> {
  %c = fusion.sum %x dims = [0, 3] : tensor<4x4x8x4xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>
  func.return %c : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>
}

// -----

// stream(1) over the axis: a chunk holds both devices' rows, so no rotating root: the loop
// computes the chunks and one reduce-scatter after it reduces them (the lowering of any other
// partial sum).

// CHECK-LABEL: func.func @chunks
// CHECK-NOT:     hir.reduce sum
// CHECK:         hir.reduce_scatter sum %partial into %c axis 0 mesh = [0, 1]
// CHECK-NOT:     hir.reduce sum

func.func @chunks(%x: tensor<2x2x8xf32, #fusion.parallel<[didx, stream(1), serial], mesh = [0, 1]>>)
    -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %r = fusion.relu %x : tensor<2x2x8xf32, #fusion.parallel<[didx, stream(1), serial], mesh = [0, 1]>> -> tensor<2x2x8xf32, #fusion.parallel<[didx, stream(1), serial], mesh = [0, 1]>>
  %c = fusion.sum %r dims = [0] : tensor<2x2x8xf32, #fusion.parallel<[didx, stream(1), serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %c : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
