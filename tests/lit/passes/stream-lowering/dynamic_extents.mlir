// RUN: hir-opt %s --stream-lowering | filecheck %s

// Dynamic extents: each `?` of an output is the extent of an input axis found through the axis
// maps. The arguments' extents are read once with memref.dim at the top; a buffer allocated with
// dynamic sizes reuses them, and so does the trip count of a loop over a dynamic stream axis.
// So an add and a mul over the same rows get the same loop bound, and share one main loop. The
// intermediate %c becomes a ring of min(num_streams, rows) rows of the dynamic width.

// CHECK-LABEL: func.func @add_mul(
// CHECK-SAME:      %a: memref<?x?xf32> {fusion.type = tensor<?x?xf32>}, %b: memref<?x?xf32> {fusion.type = tensor<?x?xf32>}
// CHECK-NOT:     hir.for
// CHECK-DAG:     [[ROWS:%[a-z0-9_]+]] = memref.dim %a, %c0 : memref<?x?xf32>
// CHECK-DAG:     [[COLS:%[a-z0-9_]+]] = memref.dim %a, %c1 : memref<?x?xf32>
// CHECK:         %d = hir.allocate([[ROWS]], [[COLS]]) : memref<?x?xf32>
// CHECK-NEXT:    %slots = arith.minui %num_streams, [[ROWS]] : index
// CHECK-NEXT:    %c = hir.allocate(%slots, [[COLS]]) : memref<?x?xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to [[ROWS]] step %c1 {
// CHECK-NEXT:      arith.remui
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to [[ROWS]] step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %a_i = hir.alias_select %a{{\[}}[[I]]] axis 0 : memref<?x?xf32> -> memref<?xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %b_i = hir.alias_select %b{{\[}}[[I]]] axis 0 : memref<?x?xf32> -> memref<?xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %c_i = hir.alias_select %c{{\[}}[[K]]] axis 0 : memref<?x?xf32> -> memref<?xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{.*}}) outs(%c_i : memref<?xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        fusion.add {{.*}} : tensor<?xf32>, tensor<?xf32> -> tensor<?xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %d_i = hir.alias_select %d{{\[}}[[I]]] axis 0 : memref<?x?xf32> -> memref<?xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %c_i, {{%[a-z0-9_]+}} = %a_i : {{.*}}) outs(%d_i : memref<?xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        fusion.mul {{.*}} : tensor<?xf32>, tensor<?xf32> -> tensor<?xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %d : memref<?x?xf32>
func.func @add_mul(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32, #fusion.parallel<[stream, serial]>> {
  %c = fusion.add %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32, #fusion.parallel<[stream, serial]>>
  %d = fusion.mul %c, %a : tensor<?x?xf32, #fusion.parallel<[stream, serial]>>, tensor<?x?xf32> -> tensor<?x?xf32, #fusion.parallel<[stream, serial]>>
  func.return %d : tensor<?x?xf32, #fusion.parallel<[stream, serial]>>
}

// A matmul streamed on a dynamic N: the result's extents come from %a's rows and %b's columns,
// and the loop runs over %b's columns.

// CHECK-LABEL: func.func @matmul_n(
// CHECK-DAG:     [[M:%[a-z0-9_]+]] = memref.dim %a, %c0 : memref<?x?xf32>
// CHECK-DAG:     [[N:%[a-z0-9_]+]] = memref.dim %b, %c1 : memref<?x?xf32>
// CHECK:         %c = hir.allocate([[M]], [[N]]) : memref<?x?xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to [[N]] step %c1 {
// CHECK:         hir.for [[I:%[a-z0-9_]+]] = %c0 to [[N]] step %c1 {
// CHECK-NEXT:      arith.remui [[I]]
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      %b_i = hir.alias_select %b{{\[}}[[I]]] axis 1 : memref<?x?xf32> -> memref<?xf32, strided<[?], offset: ?>>
// CHECK-NEXT:      %c_i = hir.alias_select %c{{\[}}[[I]]] axis 1 : memref<?x?xf32> -> memref<?xf32, strided<[?], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %a, {{%[a-z0-9_]+}} = %b_i : memref<?x?xf32>, memref<?xf32, strided<[?], offset: ?>>) outs(%c_i : {{.*}}) {
// CHECK-NEXT:        fusion.matmul {{.*}} : tensor<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
func.func @matmul_n(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32, #fusion.parallel<[serial, stream]>> {
  %c = fusion.matmul %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32, #fusion.parallel<[serial, stream]>>
  func.return %c : tensor<?x?xf32, #fusion.parallel<[serial, stream]>>
}

// stream(2) over a dynamic extent: the trip count is the chunk count, a constant.

// CHECK-LABEL: func.func @chunks(
// CHECK:         %c = hir.allocate({{%[a-z0-9_]+}}, {{%[a-z0-9_]+}}) : memref<?x?xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c2 step %c1 {
// CHECK:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:      arith.remui [[I]]
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      %a_i = hir.alias_chunk %a{{\[}}[[I]]] axis 0 chunks 2 : memref<?x?xf32> -> memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK-NEXT:      %b_i = hir.alias_chunk %b{{\[}}[[I]]] axis 0 chunks 2 : memref<?x?xf32> -> memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK-NEXT:      %c_i = hir.alias_chunk %c{{\[}}[[I]]] axis 0 chunks 2 : memref<?x?xf32> -> memref<?x?xf32, strided<[?, 1], offset: ?>>
func.func @chunks(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32, #fusion.parallel<[stream(2), serial]>> {
  %c = fusion.add %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %c : tensor<?x?xf32, #fusion.parallel<[stream(2), serial]>>
}
