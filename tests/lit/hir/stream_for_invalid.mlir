// RUN: hir-opt %s --split-input-file --verify-diagnostics | filecheck %s

// hir.stream_for: an index and a !hir.stream block argument, no loop-carried values, index bounds
// and stream count, a !hir.stream to fork from.

func.func @yield_values(%c: index, %main: !hir.stream) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: 'hir.stream_for' op hir.stream_for carries no values: its hir.yield takes no operands
  hir.stream_for %i = %c to %c step %c streams(%s) of %c from %main {
    hir.yield %c : index
  }
  func.return
}

// -----

func.func @one_block_arg(%c: index, %main: !hir.stream) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: 'hir.stream_for' op hir.stream_for body must have exactly an index and a !hir.stream block argument
  "hir.stream_for"(%c, %c, %c, %c, %main) ({
  ^bb0(%i: index):
    hir.yield
  }) : (index, index, index, index, !hir.stream) -> ()
  func.return
}

// -----

func.func @block_args_swapped(%c: index, %main: !hir.stream) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: 'hir.stream_for' op hir.stream_for body must have exactly an index and a !hir.stream block argument
  "hir.stream_for"(%c, %c, %c, %c, %main) ({
  ^bb0(%s: !hir.stream, %i: index):
    hir.yield
  }) : (index, index, index, index, !hir.stream) -> ()
  func.return
}

// -----

func.func @caller_not_a_stream(%c: index) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: 'hir.stream_for' op operand 'main' at position 4 does not verify:
  "hir.stream_for"(%c, %c, %c, %c, %c) ({
  ^bb0(%i: index, %s: !hir.stream):
    hir.yield
  }) : (index, index, index, index, index) -> ()
  func.return
}

// -----

func.func @count_not_index(%c: index, %n: i64, %main: !hir.stream) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: 'hir.stream_for' op operand 'num_streams' at position 3 does not verify:
  "hir.stream_for"(%c, %c, %c, %n, %main) ({
  ^bb0(%i: index, %s: !hir.stream):
    hir.yield
  }) : (index, index, index, i64, !hir.stream) -> ()
  func.return
}

// -----

func.func @negative_step(%ub: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %step = arith.constant -1 : index
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: 'hir.stream_for' op the step must be positive, got -1
  hir.stream_for %i = %c0 to %ub step %step streams(%s) of %n from %main {
  }
  func.return
}

// -----

func.func @no_streams(%ub: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: 'hir.stream_for' op the stream count must be >= 1, got 0
  hir.stream_for %i = %c0 to %ub step %c1 streams(%s) of %c0 from %main {
  }
  func.return
}
