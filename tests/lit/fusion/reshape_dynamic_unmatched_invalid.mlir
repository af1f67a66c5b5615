// RUN: hir-opt %s --split-input-file --verify-diagnostics

// A dynamic extent left without a dynamic partner is named as the reason (the element counts
// cannot be compared, so "the element counts differ" would be wrong).

func.func @three_to_two(%x: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
  // expected-error@+1 {{'fusion.reshape' op cannot reshape ?x?x? to ?x?: a dynamic extent must stay one axis of its own, facing a dynamic extent on the other side}}
  %y = fusion.reshape %x : tensor<?x?x?xf32> -> tensor<?x?xf32>
  func.return %y : tensor<?x?xf32>
}

// -----

func.func @static_into_dynamic(%x: tensor<4x6xf32>) -> tensor<4x?xf32> {
  // expected-error@+1 {{cannot reshape 4x6 to 4x?: a dynamic extent must stay one axis of its own}}
  %y = fusion.reshape %x : tensor<4x6xf32> -> tensor<4x?xf32>
  func.return %y : tensor<4x?xf32>
}

// -----

func.func @counts_differ(%x: tensor<4x3xf32>) -> tensor<5x2xf32> {
  // expected-error@+1 {{cannot reshape 4x3 to 5x2: the element counts differ}}
  %y = fusion.reshape %x : tensor<4x3xf32> -> tensor<5x2xf32>
  func.return %y : tensor<5x2xf32>
}
