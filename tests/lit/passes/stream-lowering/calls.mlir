// RUN: hir-opt %s --stream-lowering | filecheck %s

// A program written as several functions: convert-fusion-to-hir inlines every func.call of a
// fusion-level function (calls in the callee too) before it lowers the caller, so the callee's ops
// are units of the caller; each function is also lowered on its own.

// CHECK-LABEL: func.func @leaf(
// CHECK:         fusion.exp
func.func @leaf(%x: tensor<5x3xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>) {
  %e = fusion.exp %x : tensor<5x3xf32> -> tensor<5x3xf32>
  func.return %e, %x : tensor<5x3xf32>, tensor<5x3xf32>
}

// CHECK-LABEL: func.func @mid(
// CHECK-NOT:     func.call
// CHECK-COUNT-2: fusion.exp
// CHECK:         fusion.add
// CHECK:         hir.for
// CHECK:           fusion.mul
func.func @mid(%x: tensor<5x3xf32>, %y: tensor<5x3xf32>) -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>> {
  %a, %b = func.call @leaf(%x) : (tensor<5x3xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>)
  %c, %d = func.call @leaf(%y) : (tensor<5x3xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>)
  %s = fusion.add %a, %c : tensor<5x3xf32>, tensor<5x3xf32> -> tensor<5x3xf32>
  %t = fusion.mul %s, %d : tensor<5x3xf32>, tensor<5x3xf32> -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %t : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
}

// CHECK-LABEL: func.func @main(
// CHECK-NOT:     func.call
// CHECK:         fusion.neg
func.func @main(%x: tensor<5x3xf32>, %y: tensor<5x3xf32>) -> (tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>, tensor<5x3xf32>) {
  %r = func.call @mid(%x, %y) : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
  %n = fusion.neg %r : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>> -> tensor<5x3xf32>
  func.return %r, %n : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>, tensor<5x3xf32>
}
