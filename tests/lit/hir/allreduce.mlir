// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.allreduce: sum, max or min of the mesh devices' inputs; input and output may alias.

// CHECK-LABEL: func.func @allreduce(
func.func @allreduce(%a: memref<4x8xf32>, %b: memref<4x8xf32>) -> !hir.work {
  // CHECK-NEXT: %w = hir.allreduce sum %a into %b mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
  %w = hir.allreduce sum %a into %b mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}

// CHECK-LABEL: func.func @allreduce_kinds(
func.func @allreduce_kinds(%a: memref<?xf32>) {
  // CHECK-NEXT: %w0 = hir.allreduce max %a into %a mesh = [0, 1, 2] : memref<?xf32>, memref<?xf32>
  %w0 = hir.allreduce max %a into %a mesh = [0, 1, 2] : memref<?xf32>, memref<?xf32>
  // CHECK-NEXT: %w1 = hir.allreduce min %a into %a mesh = [1] : memref<?xf32>, memref<?xf32>
  %w1 = hir.allreduce min %a into %a mesh = [1] : memref<?xf32>, memref<?xf32>
  // CHECK-NEXT: func.return
  func.return
}
