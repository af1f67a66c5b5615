// Parse errors are diagnostics like the others: --verify-diagnostics checks them against the
// annotations, and --parsing-diagnostics (xdsl-opt's flag) is the same check. A parse error that
// no annotation expects fails either way (here the annotation points at the wrong line).
// RUN: hir-opt %s --verify-diagnostics
// RUN: hir-opt %s --parsing-diagnostics
// RUN: sed -e 's/@+1 {{Expected/@+2 {{Expected/' %s > %t.mlir
// RUN: not hir-opt %t.mlir --parsing-diagnostics 2>&1 | filecheck %s

func.func @f(%m: memref<4x8xf32>, %i: index) {
  // expected-error@+1 {{Expected 'axis'}}
  %v = hir.alias_select %m[%i] : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}
// CHECK:      .mlir:[[# @LINE - 3]]:32: error: unexpected error: Expected 'axis'
// CHECK-NEXT:   %v = hir.alias_select %m[%i] : memref<4x8xf32>
// CHECK-NEXT:   {{ +}}^
