// RUN: hir-opt %s -p fusion-segment | hir-opt | filecheck %s

// Results are only the values used outside: a value used only inside is not yielded, and a
// group whose values are all dead makes a segment without results (which still round-trips).

// CHECK-LABEL: func.func @internal_only(
func.func @internal_only(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %r = fusion.segment ins(%x_1 = %x : tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1
  // CHECK-NEXT:   %n = fusion.neg %e
  // CHECK-NEXT:   %r_1 = fusion.relu %e
  // CHECK-NEXT:   fusion.yield %r_1 : tensor<4xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %r
  %e = fusion.exp %x : tensor<4xf32> -> tensor<4xf32>
  %n = fusion.neg %e : tensor<4xf32> -> tensor<4xf32>
  %r = fusion.relu %e : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @all_dead(
func.func @all_dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: fusion.segment ins(%x_1 = %x : tensor<4xf32>) -> () {
  // CHECK-NEXT:   %e = fusion.exp %x_1
  // CHECK-NEXT:   %n = fusion.neg %e
  // CHECK-NEXT:   fusion.yield
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %x
  %e = fusion.exp %x : tensor<4xf32> -> tensor<4xf32>
  %n = fusion.neg %e : tensor<4xf32> -> tensor<4xf32>
  func.return %x : tensor<4xf32>
}
