// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics

// A scatter (replicated -> sharded) is not supported: reported, not guessed.

func.func @scatter(%x: tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower a scatter (replicated -> didx axis 0): scatter and all-to-all are not supported}}
  %y = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// -----

// A computing op whose result is sharded where its operand is not: fusion-decompose-resharding
// inserts the scatter before it, and the error names the op.
func.func @relu_scatter(%x: tensor<2x16xf32>) -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower a scatter (replicated -> didx axis 0): scatter and all-to-all are not supported}}
  %y = fusion.relu %x : tensor<2x16xf32> -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
