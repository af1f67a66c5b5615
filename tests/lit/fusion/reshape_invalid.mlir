// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.reshape: element counts agree; a dynamic extent stays one axis facing a dynamic one.

func.func @count(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{'fusion.reshape' op cannot reshape 4x6 to 5x5: the element counts differ}}
  %0 = fusion.reshape %x : tensor<4x6xf32> -> tensor<5x5xf32>
  func.return
}

// -----

func.func @count_tail(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{'fusion.reshape' op cannot reshape 4x6 to 4x6x2: the element counts differ}}
  %0 = fusion.reshape %x : tensor<4x6xf32> -> tensor<4x6x2xf32>
  func.return
}

// -----

func.func @dynamic_merged(%x: tensor<?x6xf32>) {
  // expected-error@+1 {{'fusion.reshape' op cannot reshape ?x6 to ?: the element counts differ}}
  %0 = fusion.reshape %x : tensor<?x6xf32> -> tensor<?xf32>
  func.return
}

// -----

func.func @dynamic_static(%x: tensor<?x6xf32>) {
  // expected-error@+1 {{'fusion.reshape' op cannot reshape ?x6 to 4x6: a dynamic extent must stay one axis of its own}}
  %0 = fusion.reshape %x : tensor<?x6xf32> -> tensor<4x6xf32>
  func.return
}

// -----

func.func @element_type(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{'fusion.reshape' op operand #0 has element type f32, the result f16}}
  %0 = fusion.reshape %x : tensor<4x6xf32> -> tensor<24xf16>
  func.return
}
