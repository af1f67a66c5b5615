// --parsing-diagnostics: an expected parse error goes to stdout and the exit status is 0; a parse
// error is not "expected" under --verify-diagnostics alone.
// RUN: hir-opt %s --parsing-diagnostics | filecheck %s
// RUN: not hir-opt %s --verify-diagnostics 2>&1 | filecheck %s

// CHECK: {{.*}}parsing_diagnostics.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: Expected 'axis'
func.func @f(%m: memref<4x8xf32>, %i: index) {
  %v = hir.alias_select %m[%i] : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}
