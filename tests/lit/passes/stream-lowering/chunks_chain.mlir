// RUN: hir-opt %s --stream-lowering | filecheck %s

// A stream(4) chain: mul, relu and a row sum, each stream-parallel on axis 0 split into 4 chunks.
// mul and sum are standalone host ops, so the three are three units; their loops all run over the
// 4 chunks and read only the chunk the previous one wrote, so hir-loop-fusion merges them into one
// fork loop and one main loop. Views are hir.alias_chunk (2 rows of 8 per chunk), the launches see
// 2-row tensors and the sum keeps its dims (chunks do not remove the axis). %m and %r live inside
// an iteration: hir-ring-intermediates allocates them as rings of min(num_streams, 4) chunks, each
// slot a contiguous 2x16 chunk selected by the worker's stream index.

// CHECK-LABEL: func.func @chain(
// CHECK-NOT:     hir.for
// CHECK:         %s = hir.allocate() : memref<8xf32>
// CHECK-NEXT:    %slots = arith.minui %num_streams, %c4 : index
// CHECK-NEXT:    %m = hir.allocate(%slots) : memref<?x2x16xf32>
// CHECK-NEXT:    %r = hir.allocate(%slots) : memref<?x2x16xf32>
// CHECK-NEXT:    hir.for [[F:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[FK:%[a-z0-9_]+]] = arith.remui [[F]], %num_streams : index
// CHECK-NEXT:      [[FS:%[a-z0-9_]+]] = hir.stream [[FK]]
// CHECK-NEXT:      hir.set_current_stream [[FS]]
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %a_i = hir.alias_chunk %a{{\[}}[[I]]] axis 0 chunks 4 : memref<8x16xf32> -> memref<2x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:      %b_i = hir.alias_chunk %b{{\[}}[[I]]] axis 0 chunks 4 : memref<8x16xf32> -> memref<2x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:      %m_i = hir.alias_select %m{{\[}}[[K]]] axis 0 : memref<?x2x16xf32> -> memref<2x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %a_i, [[B:%[a-z0-9_]+]] = %b_i : {{.*}}) outs(%m_i : memref<2x16xf32, strided<[16, 1], offset: ?>>) {
// CHECK-NEXT:        [[M:%[a-z0-9_]+]] = fusion.mul [[A]], [[B]] : tensor<2x16xf32>, tensor<2x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT:        hir.yield [[M]] : tensor<2x16xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %r_i = hir.alias_select %r{{\[}}[[K]]] axis 0 : memref<?x2x16xf32> -> memref<2x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[M2:%[a-z0-9_]+]] = %m_i : memref<2x16xf32, strided<[16, 1], offset: ?>>) outs(%r_i : memref<2x16xf32, strided<[16, 1], offset: ?>>) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.relu [[M2]] : tensor<2x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<2x16xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %s_i = hir.alias_chunk %s{{\[}}[[I]]] axis 0 chunks 4 : memref<8xf32> -> memref<2xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[R2:%[a-z0-9_]+]] = %r_i : memref<2x16xf32, strided<[16, 1], offset: ?>>) outs(%s_i : memref<2xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        [[SUM:%[a-z0-9_]+]] = fusion.sum [[R2]] dims = [1] : tensor<2x16xf32> -> tensor<2xf32>
// CHECK-NEXT:        hir.yield [[SUM]] : tensor<2xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %s : memref<8xf32>
func.func @chain(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> tensor<8xf32, #fusion.parallel<[stream(4)]>> {
  %m = fusion.mul %a, %b : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32, #fusion.parallel<[stream(4), serial]>>
  %r = fusion.relu %m : tensor<8x16xf32, #fusion.parallel<[stream(4), serial]>> -> tensor<8x16xf32, #fusion.parallel<[stream(4), serial]>>
  %s = fusion.sum %r dims = [1] : tensor<8x16xf32, #fusion.parallel<[stream(4), serial]>> -> tensor<8xf32, #fusion.parallel<[stream(4)]>>
  func.return %s : tensor<8xf32, #fusion.parallel<[stream(4)]>>
}
