// Ops of unknown dialects parse with --allow-unregistered-dialect, and are an error without it.
// RUN: hir-opt %s --allow-unregistered-dialect | filecheck %s
// RUN: not hir-opt %s 2>&1 | filecheck %s --check-prefix=ERR

// CHECK: "foo.bar"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// ERR:   allow_unregistered_dialect.mlir:[[# @LINE + 2]]:17: error: Operation foo.bar is not registered
func.func @f(%a: tensor<4xf32>) {
  %0 = "foo.bar"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}
