// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP
// RUN: hir-opt %s --split-input-file -p canonicalize,cse,dce | filecheck %s --check-prefix=KEPT

// hir.stream_for: a loop whose iteration i runs on pool stream (i mod %n), bound to %s, forked
// from and joined into the stream %main; `peel_first` is a schedule hint for its expansion.

// CHECK-LABEL: func.func @copy_rows(
// KEPT-LABEL:  func.func @copy_rows(
func.func @copy_rows(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = hir.num_streams
  %main = hir.get_current_stream
  // CHECK:      hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
  // CHECK-NEXT:   %row = hir.alias_select %a[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  // CHECK-NEXT:   %out = hir.alias_select %b[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  // CHECK-NEXT:   hir.launch ins(%x = %row : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32, strided<[1], offset: ?>>) {
  // CHECK-NEXT:     %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
  // CHECK-NEXT:     hir.yield %y : tensor<8xf32>
  // CHECK-NEXT:   }
  // CHECK-NEXT: }
  // An empty loop still forks and joins: canonicalize, cse and dce keep it, and the one above.
  // KEPT:       hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
  // KEPT:       hir.stream_for %j = %c0 to %c4 step %c1 streams(%t) of %n from %main {
  // KEPT-NEXT:  }
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %row = hir.alias_select %a[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out = hir.alias_select %b[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %row : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%t) of %n from %main {
  }
  func.return
}

// -----

// The worker stream is a value of the body: work may switch to another stream and back.
// Properties and attributes print after the operands and after the body.

// CHECK-LABEL: func.func @switch_and_back(
func.func @switch_and_back(%lb: index, %ub: index, %st: index, %n: index, %main: !hir.stream, %comm: !hir.stream) {
  // CHECK:      hir.stream_for %i = %lb to %ub step %st streams(%s) of %n from %main peel_first {
  // CHECK-NEXT:   hir.set_current_stream %comm
  // CHECK-NEXT:   hir.set_current_stream %s
  // CHECK-NEXT:   hir.synchronize %comm
  // CHECK-NEXT: } {tag = 1 : i64}
  hir.stream_for %i = %lb to %ub step %st streams(%s) of %n from %main peel_first {
    hir.set_current_stream %comm
    hir.set_current_stream %s
    hir.synchronize %comm
  } {tag = 1 : i64}
  func.return
}
