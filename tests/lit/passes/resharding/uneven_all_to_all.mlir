// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// A didx -> didx set on one mesh where either axis is not one index per device: the transports'
// all-to-all exchanges equal blocks, so the source axis is all-gathered (padded when the mesh
// does not divide it) into %gathered and this device's chunk of the result axis is copied out
// (passes/resharding/set_lowering.py, gathered_all_to_all). Refused before.

// 5 rows over the mesh [1, 0] (3 and 2) -> columns: the padded all-gather, then the local chunk.
// CHECK-LABEL: func.func @all_to_all_5_over_2
// CHECK:         %y = hir.allocate() : memref<5x2xf32>
// CHECK-NEXT:    %gathered = hir.allocate() : memref<5x4xf32>
// CHECK-NEXT:    %padded = hir.allocate() : memref<3x4xf32>
// CHECK:         hir.allgather %padded into %gathered_1 axis 0 mesh = [1, 0] : memref<3x4xf32>, memref<6x4xf32>
// CHECK:         fusion.slice %{{.*}} offsets = [0, 0] strides = [1, 1] : tensor<6x4xf32> -> tensor<5x4xf32>
// CHECK:         %mine = hir.alias_chunk %gathered[%me] axis 1 chunks 2 : memref<5x4xf32> -> memref<5x2xf32, strided<[4, 1], offset: ?>>
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %mine : {{.*}}) outs(%y : memref<5x2xf32>)
// CHECK-NOT:     hir.all_to_all
func.func @all_to_all_5_over_2(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 0]>>) -> tensor<5x4xf32, #fusion.parallel<[serial, didx], mesh = [1, 0]>> {
  %y = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 0]>> -> tensor<5x4xf32, #fusion.parallel<[serial, didx], mesh = [1, 0]>>
  func.return %y : tensor<5x4xf32, #fusion.parallel<[serial, didx], mesh = [1, 0]>>
}

// -----

// A K-sharded matmul whose result is sharded on its 6 rows (3 per device): A's rows reach their
// device through the all-gather of K and the local chunk, then the local matmul.
// CHECK-LABEL: func.func @matmul_k_to_rows
// CHECK:         hir.allgather %shard into %gathered_1 axis 0 mesh = [0, 1] : memref<1x6xf32>, memref<2x6xf32>
// CHECK:         %mine = hir.alias_chunk %gathered[%me] axis 0 chunks 2 : memref<6x2xf32> -> memref<3x2xf32, strided<[2, 1], offset: ?>>
// CHECK:         fusion.matmul %{{.*}}, %{{.*}} : tensor<3x2xf32>, tensor<2x5xf32> -> tensor<3x5xf32>
func.func @matmul_k_to_rows(%a: tensor<6x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, %b: tensor<2x5xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<6x5xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %c = fusion.matmul %a, %b : tensor<6x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, tensor<2x5xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<6x5xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %c : tensor<6x5xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
