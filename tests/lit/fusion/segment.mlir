// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.segment: fusion ops grouped into one kernel, isolated from above, ended by fusion.yield;
// one or several results, zero or more operands.

// CHECK-LABEL: func.func @segment(
func.func @segment(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.segment ins(%x = %a : tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = fusion.segment ins(%x = %a : tensor<4x8xf32>) -> tensor<4x8xf32> {
    // CHECK-NEXT: %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
    %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
    // CHECK-NEXT: %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
    %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
    // CHECK-NEXT: fusion.yield %n : tensor<4x8xf32>
    fusion.yield %n : tensor<4x8xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @segment_two_results(
func.func @segment_two_results(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  // CHECK-NEXT: %r, %q = fusion.segment ins(%x = %a, %y = %b : tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) attributes {id = 0 : i64} {
  %r, %q = fusion.segment ins(%x = %a, %y = %b : tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) attributes {id = 0 : i64} {
    // CHECK-NEXT: %s = fusion.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %s = fusion.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    // CHECK-NEXT: %m = fusion.max %s dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
    %m = fusion.max %s dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
    // CHECK-NEXT: fusion.yield %s, %m : tensor<4x8xf32>, tensor<4xf32>
    fusion.yield %s, %m : tensor<4x8xf32>, tensor<4xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return %r, %q : tensor<4x8xf32>, tensor<4xf32>
  func.return %r, %q : tensor<4x8xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @segment_encoded(
func.func @segment_encoded(%a: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.segment ins(%x = %a : tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %r = fusion.segment ins(%x = %a : tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
    // CHECK-NEXT: %s = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    %s = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    // CHECK-NEXT: fusion.yield %s : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    fusion.yield %s : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
