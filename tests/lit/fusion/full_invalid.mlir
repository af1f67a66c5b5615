// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.full: a static shape, a value the element type holds.

func.func @dynamic() {
  // expected-error@+1 {{'fusion.full' op the shape ?x4 must be static}}
  %0 = fusion.full 1.000000e+00 : tensor<?x4xf32>
  func.return
}

// -----

func.func @float_for_int() {
  // expected-error@+1 {{'fusion.full' op an i32 tensor needs an integer value, got 0.5}}
  %0 = fusion.full 5.000000e-01 : tensor<4xi32>
  func.return
}

// -----

func.func @bool_range() {
  // expected-error@+1 {{'fusion.full' op value 2 is out of range for i1 ([0, 1])}}
  %0 = fusion.full 2 : tensor<4xi1>
  func.return
}

// -----

func.func @int_range() {
  // expected-error@+1 {{'fusion.full' op value 128 is out of range for i8 ([-128, 127])}}
  %0 = fusion.full 128 : tensor<4xi8>
  func.return
}

// -----

func.func @float_overflow() {
  // expected-error@+1 {{'fusion.full' op value 70000 overflows f16 (largest finite 65504)}}
  %0 = fusion.full 70000 : tensor<4xf16>
  func.return
}
