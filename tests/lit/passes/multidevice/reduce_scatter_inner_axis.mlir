// RUN: hir-opt %s --stream-lowering | filecheck %s

// A sum over the didx axis reduce-scattered onto an axis that is not outermost in the output's
// memory: the collective splits its buffers along their outermost axis, so the local partial is
// permuted into an axis-first %sent, reduce-scattered into an axis-first %received and permuted
// back into the output (passes/lower_communication.py, staged_reduce_scatter; refused before).
// CHECK-LABEL: func.func @reduce_scatter_inner
// CHECK:         %y = hir.allocate() : memref<4x1x8xf32>
// CHECK-NEXT:    %partial = hir.allocate() : memref<4x2x8xf32>
// CHECK:           fusion.sum %{{.*}} dims = [0] : tensor<1x4x2x8xf32> -> tensor<4x2x8xf32>
// CHECK:         %sent = hir.allocate() : memref<2x4x8xf32>
// CHECK:           fusion.permute %{{.*}} perm = [1, 0, 2] : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
// CHECK:         %received = hir.allocate() : memref<1x4x8xf32>
// CHECK-NEXT:    %[[RS:.*]] = hir.reduce_scatter sum %sent into %received axis 0 mesh = [0, 1] : memref<2x4x8xf32>, memref<1x4x8xf32>
// CHECK-NEXT:    hir.wait %[[RS]]
// CHECK:           fusion.permute %{{.*}} perm = [1, 0, 2] : tensor<1x4x8xf32> -> tensor<4x1x8xf32>
func.func @reduce_scatter_inner(%x: tensor<2x4x2x8xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>) -> tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<2x4x2x8xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}
