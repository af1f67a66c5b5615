// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine chunks=2}' | filecheck %s

// A row-parallel matmul + all-reduce over 7 rows in stream(3) chunks: the chunks have 3, 3 and 1
// rows, so the partial and output chunks are memref<1x?x5> and memref<?x5>. The copy-engine
// backend's symmetric slots need one static block shape, so it leaves this partial sum to the
// NCCL lowering (an hir.allreduce per chunk) rather than refusing it.

// CHECK-NOT:  symmetric
// CHECK-NOT:  hir.peer_view
// The loop over the chunks (after the one that forks the streams), the matmul on chunk i:
// CHECK:        hir.alias_chunk %at[%[[I:[a-z0-9_]+]]] axis 1 chunks 3 : memref<1x7x4xf32> -> memref<1x?x4xf32
// CHECK:        %[[CI:[a-z0-9_]+]] = hir.alias_chunk %c[%[[I]]] axis 0 chunks 3 : memref<7x5xf32> -> memref<?x5xf32
// CHECK-NEXT:   hir.launch ins(%{{.*}} = %{{.*}} : memref<1x?x5xf32{{.*}}>) outs(%[[CI]] : {{.*}}) {
// CHECK-NEXT:     fusion.sum %{{.*}} dims = [0] : tensor<1x?x5xf32> -> tensor<?x5xf32>
// CHECK:        %[[DONE:[a-z0-9_]+]] = hir.allreduce sum %[[CI]] into %[[CI]] mesh = [0, 1] : memref<?x5xf32
// CHECK-NEXT:   hir.wait %[[DONE]]
// CHECK-NOT:  symmetric
// CHECK-NOT:  hir.peer_view

func.func @main(%a: tensor<7x2x4xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, %b: tensor<2x4x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<7x5xf32, #fusion.parallel<[stream(3), serial], mesh = [0, 1]>> {
  %at = fusion.permute %a perm = [1, 0, 2] : tensor<7x2x4xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<2x7x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  %p = fusion.matmul %at, %b : tensor<2x7x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x7x5xf32, #fusion.parallel<[didx, stream(3), serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [0] : tensor<2x7x5xf32, #fusion.parallel<[didx, stream(3), serial], mesh = [0, 1]>> -> tensor<7x5xf32, #fusion.parallel<[stream(3), serial], mesh = [0, 1]>>
  func.return %c : tensor<7x5xf32, #fusion.parallel<[stream(3), serial], mesh = [0, 1]>>
}
