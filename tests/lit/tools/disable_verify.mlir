// --disable-verify prints a module that does not verify instead of failing.
// RUN: hir-opt %s --disable-verify | filecheck %s

// CHECK: %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
func.func @f(%a: tensor<4xf32>) {
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}
