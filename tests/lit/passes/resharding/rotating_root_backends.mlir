// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine}' | filecheck %s
// RUN: hir-opt %s -p 'stream-lowering{backend=ring}' | filecheck %s

// The other backends keep the NCCL reduce to a rotating root (neither has a reduce of its own):
// the same loop as with backend=nccl, no symmetric memory, no ring.

// CHECK-LABEL: func.func @main
// CHECK-NOT:     symmetric
// CHECK-NOT:     hir.collective_permute
// CHECK:         hir.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK:         hir.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK:           fusion.matmul
// CHECK:           %[[W:.*]] = hir.reduce sum %cu_i into %c root %[[I]] mesh = [0, 1]
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NOT:     hir.collective_permute
// CHECK-NOT:     hir.reduce_scatter

func.func @main(%a: tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>,
                %b: tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %cu = fusion.matmul %a, %b : tensor<2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>, tensor<2x1x16x4xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x4xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %cu dims = [0] : tensor<2x2x8x4xf32, #fusion.parallel<[didx, stream, serial, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}
