// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// Matmuls in stream(N) chunks (nvFuser's Python tests of stream-parallel matmuls, test_stream.py).

// test_matmul: a [5,7] x [7,6] matmul whose N is split in 3 chunks: 3 GEMMs of [5,7] x [7,2] ->
// [5,2], the weight and the result chunked on axis 1, the input passed whole.

// CHECK-LABEL: func.func @matmul_n_chunks(
// CHECK:         %c = hir.allocate() : memref<5x6xf32>
// CHECK:         hir.synchronize %main
// CHECK:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %w_i = hir.alias_chunk %w{{\[}}[[I]]] axis 1 chunks 3 : memref<7x6xf32> -> memref<7x2xf32, strided<[6, 1], offset: ?>>
// CHECK-NEXT:      %c_i = hir.alias_chunk %c{{\[}}[[I]]] axis 1 chunks 3 : memref<5x6xf32> -> memref<5x2xf32, strided<[6, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %a, {{%[a-z0-9_]+}} = %w_i : memref<5x7xf32>, memref<7x2xf32, strided<[6, 1], offset: ?>>) outs(%c_i : memref<5x2xf32, strided<[6, 1], offset: ?>>) {
// CHECK-NEXT:        fusion.matmul {{.*}} : tensor<5x7xf32>, tensor<7x2xf32> -> tensor<5x2xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %c : memref<5x6xf32>
func.func @matmul_n_chunks(%a: tensor<5x7xf32>, %w: tensor<7x6xf32>) -> tensor<5x6xf32, #fusion.parallel<[serial, stream(3)]>> {
  %c = fusion.matmul %a, %w : tensor<5x7xf32>, tensor<7x6xf32> -> tensor<5x6xf32, #fusion.parallel<[serial, stream(3)]>>
  func.return %c : tensor<5x6xf32, #fusion.parallel<[serial, stream(3)]>>
}

// -----

// test_two_matmuls_inlinable: two matmuls chained on M in 3 chunks. Both GEMMs of chunk i run in
// iteration i of one loop (6 GEMMs with M = 2), and the intermediate is a ring of one [2,5] chunk
// per stream, not a whole [6,5] buffer.

// CHECK-LABEL: func.func @two_matmuls_inlinable(
// CHECK:         %y = hir.allocate() : memref<6x3xf32>
// CHECK-NEXT:    %slots = arith.minui %num_streams, %c3 : index
// CHECK-NEXT:    %h = hir.allocate(%slots) : memref<?x2x5xf32>
// CHECK:         hir.synchronize %main
// CHECK:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_chunk %x{{\[}}[[I]]] axis 0 chunks 3 : memref<6x3xf32> -> memref<2x3xf32, strided<[3, 1], offset: ?>>
// CHECK-NEXT:      %h_i = hir.alias_select %h{{\[}}[[K]]] axis 0 : memref<?x2x5xf32> -> memref<2x5xf32, strided<[5, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{.*}}%x_i{{.*}}%w1{{.*}}) outs(%h_i : {{.*}}) {
// CHECK-NEXT:        fusion.matmul {{.*}} : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x5xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %y_i = hir.alias_chunk %y{{\[}}[[I]]] axis 0 chunks 3 : memref<6x3xf32> -> memref<2x3xf32, strided<[3, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{.*}}%h_i{{.*}}%w2{{.*}}) outs(%y_i : {{.*}}) {
// CHECK-NEXT:        fusion.matmul {{.*}} : tensor<2x5xf32>, tensor<5x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y : memref<6x3xf32>
func.func @two_matmuls_inlinable(%x: tensor<6x3xf32>, %w1: tensor<3x5xf32>, %w2: tensor<5x3xf32>) -> tensor<6x3xf32, #fusion.parallel<[stream(3), serial]>> {
  %h = fusion.matmul %x, %w1 : tensor<6x3xf32>, tensor<3x5xf32> -> tensor<6x5xf32, #fusion.parallel<[stream(3), serial]>>
  %y = fusion.matmul %h, %w2 : tensor<6x5xf32, #fusion.parallel<[stream(3), serial]>>, tensor<5x3xf32> -> tensor<6x3xf32, #fusion.parallel<[stream(3), serial]>>
  func.return %y : tensor<6x3xf32, #fusion.parallel<[stream(3), serial]>>
}

// -----

// test_two_matmuls_not_inlinable: the first matmul chunked on N (its weight's axis 1), the second
// on M. Chunk i of the second reads every column chunk of the first, so they are two pairs of
// loops, and the intermediate is allocated whole before the first.

// CHECK-LABEL: func.func @two_matmuls_not_inlinable(
// CHECK:         %h = hir.allocate() : memref<6x6xf32>
// CHECK:         hir.synchronize %main
// CHECK:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c3 step %c1 {
// CHECK:           %w1_i = hir.alias_chunk %w1{{\[}}[[I]]] axis 1 chunks 3
// CHECK-NEXT:      %h_i = hir.alias_chunk %h{{\[}}[[I]]] axis 1 chunks 3
// CHECK-NEXT:      hir.launch
// CHECK-NEXT:        fusion.matmul {{.*}} : tensor<6x3xf32>, tensor<3x2xf32> -> tensor<6x2xf32>
// CHECK:           hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize
// CHECK-NEXT:    }
// CHECK-NEXT:    %y = hir.allocate() : memref<6x3xf32>
// CHECK:         hir.synchronize %main
// CHECK:         hir.for [[J:%[a-z0-9_]+]] = %c0 to %c3 step %c1 {
// CHECK:           {{%[a-z0-9_]+}} = hir.alias_chunk %h{{\[}}[[J]]] axis 0 chunks 3
// CHECK-NEXT:      %y_i = hir.alias_chunk %y{{\[}}[[J]]] axis 0 chunks 3
// CHECK-NEXT:      hir.launch
// CHECK-NEXT:        fusion.matmul {{.*}} : tensor<2x6xf32>, tensor<6x3xf32> -> tensor<2x3xf32>
// CHECK:         func.return %y : memref<6x3xf32>
func.func @two_matmuls_not_inlinable(%x: tensor<6x3xf32>, %w1: tensor<3x6xf32>, %w2: tensor<6x3xf32>) -> tensor<6x3xf32, #fusion.parallel<[stream(3), serial]>> {
  %h = fusion.matmul %x, %w1 : tensor<6x3xf32>, tensor<3x6xf32> -> tensor<6x6xf32, #fusion.parallel<[serial, stream(3)]>>
  %y = fusion.matmul %h, %w2 : tensor<6x6xf32, #fusion.parallel<[serial, stream(3)]>>, tensor<6x3xf32> -> tensor<6x3xf32, #fusion.parallel<[stream(3), serial]>>
  func.return %y : tensor<6x3xf32, #fusion.parallel<[stream(3), serial]>>
}
