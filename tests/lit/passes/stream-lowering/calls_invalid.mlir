// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering

// Calls are inlined, so a callee needs a body and cannot recurse.

func.func private @ext(%x: tensor<4xf32>) -> tensor<4xf32>
func.func @declaration(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'func.call' op calls @ext, a declaration without a body: define it to inline it}}
  %r = func.call @ext(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = func.call @b(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'func.call' op calls @a recursively (@a -> @b -> @a): a call is inlined, so it cannot recurse}}
  %r = func.call @a(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
