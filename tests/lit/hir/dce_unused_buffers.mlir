// RUN: hir-opt %s -p canonicalize,cse,dce | filecheck %s

// An unused hir.allocate (static or dynamic) and unused views disappear; a buffer that is
// deallocated or written stays, and so does its hir.deallocate.

// CHECK-LABEL: func.func @unused(
func.func @unused(%n: index, %i: index) {
  // CHECK-NEXT: func.return
  %a = hir.allocate() : memref<4x8xf32>
  %b = hir.allocate(%n) symmetric : memref<?x8xf32>
  %v = hir.alias_select %a[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}

// CHECK-LABEL: func.func @deallocated(
func.func @deallocated() {
  // CHECK-NEXT: %a = hir.allocate() : memref<4xf32>
  // CHECK-NEXT: hir.deallocate %a : memref<4xf32>
  // CHECK-NEXT: func.return
  %a = hir.allocate() : memref<4xf32>
  hir.deallocate %a : memref<4xf32>
  func.return
}

// CHECK-LABEL: func.func @written(
func.func @written(%x: memref<4xf32>) {
  // CHECK-NEXT: %a = hir.allocate() : memref<4xf32>
  // CHECK-NEXT: hir.launch
  %a = hir.allocate() : memref<4xf32>
  hir.launch ins(%t = %x : memref<4xf32>) outs(%a : memref<4xf32>) {
    hir.yield %t : tensor<4xf32>
  }
  func.return
}

// Two allocations of the same type are distinct buffers: they never merge.
// CHECK-LABEL: func.func @two_buffers(
func.func @two_buffers() -> (memref<4xf32>, memref<4xf32>) {
  // CHECK-COUNT-2: hir.allocate
  %a = hir.allocate() : memref<4xf32>
  %b = hir.allocate() : memref<4xf32>
  func.return %a, %b : memref<4xf32>, memref<4xf32>
}
