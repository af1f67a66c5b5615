// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP
// RUN: hir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// hir.yield ends hir.for (no operands, printed explicitly only in the generic form) and hir.launch
// (the values written to the outs buffers).

// CHECK-LABEL: func.func @yield_launch(
func.func @yield_launch(%a: memref<2xf32>, %b: memref<2xi32>) {
  // CHECK-NEXT: hir.launch ins(%x = %a : memref<2xf32>) outs(%a, %b : memref<2xf32>, memref<2xi32>) {
  hir.launch ins(%x = %a : memref<2xf32>) outs(%a, %b : memref<2xf32>, memref<2xi32>) {
    // CHECK-NEXT: %y = fusion.abs %x : tensor<2xf32> -> tensor<2xf32>
    %y = fusion.abs %x : tensor<2xf32> -> tensor<2xf32>
    // CHECK-NEXT: %z = fusion.cast %y : tensor<2xf32> -> tensor<2xi32>
    %z = fusion.cast %y : tensor<2xf32> -> tensor<2xi32>
    // CHECK-NEXT: hir.yield %y, %z : tensor<2xf32>, tensor<2xi32>
    // GENERIC: "hir.yield"(%y, %z) : (tensor<2xf32>, tensor<2xi32>) -> ()
    hir.yield %y, %z : tensor<2xf32>, tensor<2xi32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @yield_for(
func.func @yield_for(%c0: index) {
  // CHECK-NEXT: hir.for %i = %c0 to %c0 step %c0 {
  hir.for %i = %c0 to %c0 step %c0 {
    // CHECK-NEXT: %n = hir.num_streams
    %n = hir.num_streams
    // The terminator is implicit in the custom form of hir.for.
    // GENERIC: %n = "hir.num_streams"() : () -> index
    // GENERIC-NEXT: "hir.yield"() : () -> ()
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}
