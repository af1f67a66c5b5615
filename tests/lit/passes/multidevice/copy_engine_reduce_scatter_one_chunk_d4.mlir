// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine}' | filecheck %s

// The same at D = 4: the first peer's step is peeled out of the loop over the peers (with the
// release barrier before its push); the loop pushes to the other two, without a barrier.

// CHECK-NOT:  hir.barrier
// CHECK:      fusion.matmul
// CHECK:      hir.set_current_stream %comm
// CHECK-NEXT: hir.synchronize %main
// CHECK-NEXT: hir.barrier mesh = [0, 1, 2, 3]
// CHECK:      fusion.set
// CHECK:      %[[C2:[a-z0-9_]+]] = arith.constant 2 : index
// CHECK-NEXT: hir.for %[[T:[a-z0-9_]+]] = %[[C2]] to %c4 step %c1 {
// CHECK-NOT:    hir.barrier
// CHECK:        fusion.matmul
// CHECK:        hir.synchronize %main
// CHECK-NEXT:   hir.peer_view
// CHECK:        %[[K:[a-z0-9_]+]] = arith.subi %[[T]], %c1 : index
// CHECK:        fusion.set
// CHECK:      }

func.func @main(%a: tensor<1x4x4x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>,
                %b: tensor<1x4x1x16x4xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>)
    -> tensor<1x4x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>> {
  %p = fusion.matmul %a, %b : tensor<1x4x4x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<1x4x1x16x4xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<1x4x4x8x4xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>
  %c = fusion.sum %p dims = [1] : tensor<1x4x4x8x4xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<1x4x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %c : tensor<1x4x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>>
}
