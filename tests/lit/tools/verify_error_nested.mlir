// A verifier error deep in regions names the innermost failing op's own position.
// RUN: not hir-opt %s 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK:     {{.*}}verify_error_nested.mlir:[[# @LINE + 6]]:7: error: 'hir.alias_select' op axis 3 is out of range for memref<4x8xf32> of rank 2
// CHECK-NOT: Traceback
func.func @f(%m: memref<4x8xf32>, %c0: index, %c4: index) {
  hir.for %i = %c0 to %c4 step %c4 {
    hir.for %j = %c0 to %c4 step %c4 {
      %n = hir.num_streams
      %v = hir.alias_select %m[%j] axis 3 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    }
  }
  func.return
}
