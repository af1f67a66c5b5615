// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.for: a host loop `lb to ub step s` with an index induction variable, nestable.

// CHECK-LABEL: func.func @for(
func.func @for(%lb: index, %ub: index, %st: index) {
  // CHECK-NEXT: hir.for %i = %lb to %ub step %st {
  hir.for %i = %lb to %ub step %st {
    // CHECK-NEXT: %s = hir.stream %i
    %s = hir.stream %i
    // CHECK-NEXT: hir.set_current_stream %s
    hir.set_current_stream %s
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @for_empty(
func.func @for_empty(%lb: index, %ub: index) {
  // CHECK-NEXT: hir.for %i = %lb to %ub step %lb {
  hir.for %i = %lb to %ub step %lb {
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @for_nested(
func.func @for_nested(%c0: index, %c4: index, %c1: index, %buf: memref<4x4xf32>) {
  // CHECK-NEXT: hir.for %i = %c0 to %c4 step %c1 {
  hir.for %i = %c0 to %c4 step %c1 {
    // CHECK-NEXT: %row = hir.alias_select %buf[%i] axis 0 : memref<4x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
    %row = hir.alias_select %buf[%i] axis 0 : memref<4x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
    // CHECK-NEXT: hir.for %j = %c0 to %c4 step %c1 {
    hir.for %j = %c0 to %c4 step %c1 {
      // CHECK-NEXT: %k = arith.addi %i, %j : index
      %k = arith.addi %i, %j : index
      // CHECK-NEXT: %s = hir.stream %k
      %s = hir.stream %k
      // CHECK-NEXT: hir.set_current_stream %s
      hir.set_current_stream %s
    // CHECK-NEXT: }
    }
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @for_attributes(
func.func @for_attributes(%c0: index, %c4: index) {
  // CHECK-NEXT: hir.for %i = %c0 to %c4 step %c4 {
  hir.for %i = %c0 to %c4 step %c4 {
  // CHECK-NEXT: } {unroll}
  } {unroll}
  // CHECK-NEXT: func.return
  func.return
}
