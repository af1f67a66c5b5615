// RUN: hir-opt %s --split-input-file --verify-diagnostics | filecheck %s

// fusion.exp, fusion.tanh, fusion.log, fusion.erf and fusion.div need a floating-point element type.

func.func @exp_int(%x: tensor<4xi32>) {
  // expected-error@+1 {{'fusion.exp' op fusion.exp needs a floating-point element type, got i32}}
  %0 = fusion.exp %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

func.func @tanh_int(%x: tensor<4xi8>) {
  // expected-error@+1 {{'fusion.tanh' op fusion.tanh needs a floating-point element type, got i8}}
  %0 = fusion.tanh %x : tensor<4xi8> -> tensor<4xi8>
  func.return
}

// -----

func.func @log_int(%x: tensor<4xi32>) {
  // expected-error@+1 {{'fusion.log' op fusion.log needs a floating-point element type, got i32}}
  %0 = fusion.log %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

func.func @erf_int(%x: tensor<4xi16>) {
  // expected-error@+1 {{'fusion.erf' op fusion.erf needs a floating-point element type, got i16}}
  %0 = fusion.erf %x : tensor<4xi16> -> tensor<4xi16>
  func.return
}

// -----

func.func @div_int(%a: tensor<4xi64>) {
  // expected-error@+1 {{'fusion.div' op fusion.div needs a floating-point element type, got i64}}
  %0 = fusion.div %a, %a : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  func.return
}

// -----

// The other elementwise ops accept integers.
// CHECK-LABEL: func.func @int_ok(
func.func @int_ok(%a: tensor<4xi32>) {
  // CHECK-NEXT: fusion.add
  %0 = fusion.add %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  // CHECK-NEXT: fusion.neg
  %1 = fusion.neg %a : tensor<4xi32> -> tensor<4xi32>
  // CHECK-NEXT: fusion.relu
  %2 = fusion.relu %a : tensor<4xi32> -> tensor<4xi32>
  func.return
}
