// A region left open names the region: at the end of the input, or at a token that is neither an
// operation nor its `}` (xDSL's own message was " in block definition", nothing else).
// RUN: not hir-opt %s 2>&1 | filecheck %s
// RUN: head -n 14 %s | not hir-opt - 2>&1 | filecheck %s --check-prefix=EOF
// RUN: not hir-opt %s --split-input-file 2>&1 | filecheck %s

// CHECK-NOT:  Traceback
// CHECK:      {{.*}}parse_error_unclosed_region.mlir:[[# @LINE + 7]]:3: error: expected an operation or '}' to close the region opened at line [[# @LINE + 5]]:50
// CHECK-NEXT: )
// EOF-NOT:    Traceback
// EOF:        stdin:15:1: error: the input ends inside the region opened at line 13:50: expected '}'

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
  )
}
