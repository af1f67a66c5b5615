// RUN: hir-opt %s -p fusion-segment | filecheck %s

// A segment's results are the values its ops define and something outside uses (a later op or
// func.return), in program order; its inputs are the values from outside, in first-use order.

// CHECK-LABEL: func.func @two_results(
func.func @two_results(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT: %e, %r = fusion.segment ins(%x_1 = %x : tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT:   %e_1 = fusion.exp %x_1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %n = fusion.neg %e_1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %r_1 = fusion.relu %n : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   fusion.yield %e_1, %r_1 : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: %a = fusion.add %e, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %a, %r : tensor<4x8xf32>, tensor<4x8xf32>
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.relu %n : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = fusion.add %e, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %a, %r : tensor<4x8xf32>, tensor<4x8xf32>
}

// Several inputs, each listed once at its first use; a fan-out inside the segment.

// CHECK-LABEL: func.func @inputs_in_first_use_order(
func.func @inputs_in_first_use_order(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT: %s = fusion.add %y, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %n, %t, %r = fusion.segment ins(%s_1 = %s : tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT:   %e = fusion.exp %s_1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %n_1 = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %t_1 = fusion.tanh %e : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %r_1 = fusion.relu %e : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   fusion.yield %n_1, %t_1, %r_1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %t, %r, %n : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  %s = fusion.add %y, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e = fusion.exp %s : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
  %t = fusion.tanh %e : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.relu %e : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %t, %r, %n : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// Under resharding-only the binary ops join too: two inputs in first-use order.

// RUN: hir-opt %s -p 'fusion-segment{policy=resharding-only}' | filecheck %s --check-prefix=ALL

// ALL-LABEL: func.func @inputs_in_first_use_order(
// ALL-NEXT: %n, %t, %r = fusion.segment ins(%y_1 = %y, %x_1 = %x : tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
// ALL-NEXT:   %s = fusion.add %y_1, %x_1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
