// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.random's verifier: a known distribution, a static shape, a float element type.

func.func @distribution() -> tensor<4xf32> {
  // expected-error@+1 {{'fusion.random' op the distribution must be one of uniform, normal, got 'poisson'}}
  %r = fusion.random poisson : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @dynamic() -> tensor<?xf32> {
  // expected-error@+1 {{'fusion.random' op the shape ? must be static}}
  %r = fusion.random uniform : tensor<?xf32>
  func.return %r : tensor<?xf32>
}

// -----

func.func @integer() -> tensor<4xi64> {
  // expected-error@+1 {{'fusion.random' op random numbers are floats: the element type must be one, got tensor<4xi64>}}
  %r = fusion.random uniform : tensor<4xi64>
  func.return %r : tensor<4xi64>
}
