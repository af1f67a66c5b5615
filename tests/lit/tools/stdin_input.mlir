// Without a file argument, or with `-`, hir-opt reads stdin; errors are then located in `stdin`.
// RUN: hir-opt < %s | filecheck %s
// RUN: hir-opt - < %s | filecheck %s
// RUN: sed -e 's/tensor<4xf32> -> tensor<4xf32>/tensor<4xf32> -> tensor<3xf32>/' %s | not hir-opt - 2>&1 | filecheck %s --check-prefix=ERR
// RUN: sed -e 's/tensor<4xf32> -> tensor<4xf32>/tensor<4xf32> -> tensor<3xf32>/' %s | not hir-opt 2>&1 | filecheck %s --check-prefix=ERR

// CHECK: %r = fusion.tanh %a : tensor<4xf32> -> tensor<4xf32>
// ERR:   stdin:[[# @LINE + 2]]:3: error: 'fusion.tanh' op result shape 3 does not match the expected shape 4
func.func @f(%a: tensor<4xf32>) {
  %r = fusion.tanh %a : tensor<4xf32> -> tensor<4xf32>
  func.return
}
