// RUN: hir-opt %s --split-input-file -p hir-lower-communication --verify-diagnostics

// hir-lower-communication alone: a resharding launch (one that sees encoded, global tensors) must
// hold exactly one fusion.set or fusion.sum; a hand-written one that computes too is reported.

func.func @computes_too(%a: memref<1x8xf32>, %g: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.launch' op a resharding launch must hold exactly one fusion.set or fusion.sum}}
  hir.launch ins(%x = %a : memref<1x8xf32> as tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) outs(%g : memref<2x8xf32>) {
    %y = fusion.set %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
    %z = fusion.relu %y : tensor<2x8xf32> -> tensor<2x8xf32>
    hir.yield %z : tensor<2x8xf32>
  }
  func.return
}
