// A parse error without --parsing-diagnostics: exit 1, the located message, the source line and
// a caret on stderr, no traceback.
// RUN: not hir-opt %s 2>&1 | filecheck %s

// CHECK-NOT:  Traceback
// CHECK:      {{.*}}parse_error.mlir:[[# @LINE + 5]]:73: error: unknown parallel type 'strem', expected one of serial, stream, didx
// CHECK-NEXT: %0 = fusion.set %a : tensor<4xf32> -> tensor<4xf32, #fusion.parallel<[strem]>>
// CHECK-NEXT: {{ +}}^
// CHECK-NOT:  Traceback
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32, #fusion.parallel<[stream]>> {
  %0 = fusion.set %a : tensor<4xf32> -> tensor<4xf32, #fusion.parallel<[strem]>>
  func.return %0 : tensor<4xf32, #fusion.parallel<[stream]>>
}
