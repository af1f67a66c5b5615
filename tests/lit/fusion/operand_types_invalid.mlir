// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Fusion operands and results are builtin tensors (not memrefs).

func.func @memref_operand(%x: memref<4xf32>) {
  // expected-error@+1 {{'fusion.neg' op operand 'x' at position 0 does not verify:}}
  %0 = "fusion.neg"(%x) : (memref<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @memref_result(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.relu' op result 'result' at position 0 does not verify:}}
  %0 = "fusion.relu"(%x) : (tensor<4xf32>) -> memref<4xf32>
  func.return
}

// -----

func.func @missing_operand(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.add' op Expected 2 operands, but got 1}}
  %0 = "fusion.add"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @missing_dims(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.sum' op property 'dims' expected}}
  %0 = "fusion.sum"(%x) : (tensor<4xf32>) -> tensor<f32>
  func.return
}
