// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering

// The other errors of convert-fusion-to-hir.

// A dynamic result extent that no input axis determines (a broadcast's new axis): there is no
// buffer to read it from.

func.func @unknown_extent(%x: tensor<8xf32>) -> tensor<?x8xf32, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.broadcast' op cannot infer the dynamic extent of axis 0 of the result from its inputs}}
  %b = fusion.broadcast %x dims = [0] : tensor<8xf32> -> tensor<?x8xf32, #fusion.parallel<[serial, stream]>>
  func.return %b : tensor<?x8xf32, #fusion.parallel<[serial, stream]>>
}

// -----

// A fusion-level function holds fusion ops only.

func.func @other_op(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{'arith.constant' op convert-fusion-to-hir expects only fusion ops in the function}}
  %c = arith.constant 1 : index
  %e = fusion.exp %x : tensor<8xf32> -> tensor<8xf32>
  func.return %e : tensor<8xf32>
}
