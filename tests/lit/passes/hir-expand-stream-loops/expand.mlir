// RUN: hir-opt %s --split-input-file -p hir-expand-stream-loops | filecheck %s

// hir-expand-stream-loops: each hir.stream_for becomes a fork loop (every worker stream waits for
// the caller's stream, before any iteration's work) and a main loop (the worker made current,
// the work, back to the caller's stream, which waits for the worker).

// CHECK-LABEL: func.func @copy_rows(
// CHECK:         %main = hir.get_current_stream
// CHECK-NEXT:    hir.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %k = arith.remui %i, %n : index
// CHECK-NEXT:      %s = hir.stream %k
// CHECK-NEXT:      hir.set_current_stream %s
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for %i_1 = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %k_1 = arith.remui %i_1, %n : index
// CHECK-NEXT:      %s_1 = hir.stream %k_1
// CHECK-NEXT:      hir.set_current_stream %s_1
// CHECK-NEXT:      %row = hir.alias_select %a[%i_1] axis 0
// CHECK-NEXT:      %out = hir.alias_select %b[%i_1] axis 0
// CHECK-NEXT:      hir.launch ins(%x = %row : {{.*}}) outs(%out : {{.*}}) {
// CHECK-NEXT:        %y = fusion.relu %x
// CHECK-NEXT:        hir.yield %y
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize %s_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NOT:     hir.stream_for
func.func @copy_rows(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = hir.num_streams
  %main = hir.get_current_stream
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %row = hir.alias_select %a[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out = hir.alias_select %b[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %row : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return
}

// -----

// The body's uses of the worker stream become uses of the main loop's `hir.stream`; the fork
// waits for the loop's caller stream, whichever stream that is.

// CHECK-LABEL: func.func @worker_in_body(
// CHECK:         hir.for %i = %lb to %ub step %st {
// CHECK:           hir.synchronize %other
// CHECK:         hir.for %i_1 = %lb to %ub step %st {
// CHECK-NEXT:      %k_1 = arith.remui %i_1, %n : index
// CHECK-NEXT:      %w_1 = hir.stream %k_1
// CHECK-NEXT:      hir.set_current_stream %w_1
// CHECK-NEXT:      hir.set_current_stream %comm
// CHECK-NEXT:      hir.set_current_stream %w_1
// CHECK-NEXT:      hir.synchronize %comm
// CHECK-NEXT:      hir.set_current_stream %other
// CHECK-NEXT:      hir.synchronize %w_1
// CHECK-NEXT:    }
func.func @worker_in_body(%lb: index, %ub: index, %st: index, %n: index, %other: !hir.stream, %comm: !hir.stream) {
  hir.stream_for %i = %lb to %ub step %st streams(%w) of %n from %other {
    hir.set_current_stream %comm
    hir.set_current_stream %w
    hir.synchronize %comm
  }
  func.return
}

// -----

// peel_first with constant bounds: iteration 0 runs as straight-line code after the fork loop
// (all fork waits still come first), and the main loop starts at 0 + 1.

// CHECK-LABEL: func.func @peeled(
// CHECK:         hir.for %i = %c0 to %c2 step %c1 {
// CHECK:           hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    %k_1 = arith.remui %c0, %n : index
// CHECK-NEXT:    %s_1 = hir.stream %k_1
// CHECK-NEXT:    hir.set_current_stream %s_1
// CHECK-NEXT:    %row = hir.alias_select %a[%c0] axis 0
// CHECK-NEXT:    hir.launch ins(%x = %row : {{.*}}) outs(%row : {{.*}}) {
// CHECK:         }
// CHECK-NEXT:    hir.set_current_stream %main
// CHECK-NEXT:    hir.synchronize %s_1
// CHECK-NEXT:    [[START:%.*]] = arith.addi %c0, %c1 : index
// CHECK-NEXT:    hir.for %i_1 = [[START]] to %c2 step %c1 {
// CHECK-NEXT:      %k_2 = arith.remui %i_1, %n : index
// CHECK:           %row_1 = hir.alias_select %a[%i_1] axis 0
// CHECK:           hir.synchronize %s_2
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @peeled(%a: memref<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = hir.num_streams
  %main = hir.get_current_stream
  hir.stream_for %i = %c0 to %c2 step %c1 streams(%s) of %n from %main peel_first {
    %row = hir.alias_select %a[%i] axis 0 : memref<2x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %row : memref<8xf32, strided<[1], offset: ?>>) outs(%row : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.neg %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return
}

// -----

// peel_first is only a hint: with bounds that are not constants, or a loop that runs no
// iteration, nothing is peeled.

// CHECK-LABEL: func.func @not_peeled(
// CHECK:         hir.for %i = %lb to %ub step %c1 {
// CHECK:         hir.for %i_1 = %lb to %ub step %c1 {
// CHECK:         hir.for %j = %c2 to %c1 step %c1 {
// CHECK:         hir.for %j_1 = %c2 to %c1 step %c1 {
// CHECK-NOT:     arith.addi
func.func @not_peeled(%lb: index, %ub: index, %a: memref<2x8xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = hir.num_streams
  %main = hir.get_current_stream
  hir.stream_for %i = %lb to %ub step %c1 streams(%s) of %n from %main peel_first {
    %row = hir.alias_select %a[%i] axis 0 : memref<2x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  }
  hir.stream_for %j = %c2 to %c1 step %c1 streams(%t) of %n from %main peel_first {
    %row = hir.alias_select %a[%j] axis 0 : memref<2x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  }
  func.return
}

// -----

// Nested in another loop, and nested in each other: every hir.stream_for is expanded.

// CHECK-LABEL: func.func @nested(
// CHECK:         hir.for %r = %c0 to %c2 step %c1 {
// CHECK-NEXT:      hir.for %i = %c0 to %c2 step %c1 {
// CHECK:           hir.for %i_1 = %c0 to %c2 step %c1 {
// CHECK:             hir.for %j = %c0 to %c2 step %c1 {
// CHECK:               hir.synchronize %s_1
// CHECK:             hir.for %j_1 = %c0 to %c2 step %c1 {
// CHECK:               hir.set_current_stream %s_1
// CHECK-NEXT:          hir.synchronize %t_1
// CHECK-NEXT:        }
// CHECK-NEXT:        hir.set_current_stream %main
// CHECK-NEXT:        hir.synchronize %s_1
// CHECK-NOT:     hir.stream_for
func.func @nested() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = hir.num_streams
  %main = hir.get_current_stream
  hir.for %r = %c0 to %c2 step %c1 {
    hir.stream_for %i = %c0 to %c2 step %c1 streams(%s) of %n from %main {
      hir.stream_for %j = %c0 to %c2 step %c1 streams(%t) of %n from %s {
      }
    }
  }
  func.return
}

// -----

// A loop of one iteration (constant bounds: rows in one chunk) runs on the caller's stream, as
// straight-line code: no fork, no worker, no join. Its worker stream is the caller's: a switch to
// it (here after a copy-engine style comm stream, which waits for it) names %main.

// CHECK-LABEL: func.func @one_iteration(
// CHECK:         %main = hir.get_current_stream
// CHECK-NEXT:    %comm = hir.stream %n
// CHECK-NEXT:    hir.set_current_stream %main
// CHECK-NEXT:    %row = hir.alias_select %a[%c0] axis 0
// CHECK-NEXT:    %out = hir.alias_select %b[%c0] axis 0
// CHECK-NEXT:    hir.launch ins(%x = %row : {{.*}}) outs(%out : {{.*}}) {
// CHECK:         hir.set_current_stream %comm
// CHECK-NEXT:    hir.synchronize %main
// CHECK-NEXT:    hir.set_current_stream %main
// CHECK-NEXT:    func.return
// CHECK-NOT:     hir.for
func.func @one_iteration(%a: memref<1x8xf32>, %b: memref<1x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = hir.num_streams
  %main = hir.get_current_stream
  %comm = hir.stream %n
  hir.stream_for %i = %c0 to %c1 step %c1 streams(%s) of %n from %main {
    %row = hir.alias_select %a[%i] axis 0 : memref<1x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out = hir.alias_select %b[%i] axis 0 : memref<1x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %row : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
    hir.set_current_stream %comm
    hir.synchronize %s
    hir.set_current_stream %s
  }
  func.return
}
