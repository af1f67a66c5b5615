// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.for: one index block argument, no loop-carried values, index bounds.

func.func @yield_values(%c: index) {
  // expected-error@+1 {{'hir.for' op hir.for carries no values: its hir.yield takes no operands}}
  hir.for %i = %c to %c step %c {
    hir.yield %c : index
  }
  func.return
}

// -----

func.func @two_block_args(%c: index) {
  // expected-error@+1 {{'hir.for' op hir.for body must have exactly one index block argument}}
  "hir.for"(%c, %c, %c) ({
  ^bb0(%i: index, %j: index):
    hir.yield
  }) : (index, index, index) -> ()
  func.return
}

// -----

func.func @no_block_arg(%c: index) {
  // expected-error@+1 {{'hir.for' op hir.for body must have exactly one index block argument}}
  "hir.for"(%c, %c, %c) ({
    hir.yield
  }) : (index, index, index) -> ()
  func.return
}

// -----

func.func @block_arg_not_index(%c: index) {
  // expected-error@+1 {{'hir.for' op hir.for body must have exactly one index block argument}}
  "hir.for"(%c, %c, %c) ({
  ^bb0(%i: i64):
    hir.yield
  }) : (index, index, index) -> ()
  func.return
}

// -----

func.func @bound_not_index(%c: index, %n: i64) {
  // expected-error@+1 {{'hir.for' op operand 'ub' at position 1 does not verify:}}
  "hir.for"(%c, %n, %c) ({
  ^bb0(%i: index):
    hir.yield
  }) : (index, i64, index) -> ()
  func.return
}

// -----

func.func @wrong_terminator(%c: index) {
  // expected-error@+1 {{'hir.for' op 'hir.for' terminates with operation func.return instead of hir.yield}}
  "hir.for"(%c, %c, %c) ({
  ^bb0(%i: index):
    func.return
  }) : (index, index, index) -> ()
  func.return
}

// -----

// Constant bounds the runtime would refuse are refused here: a step that is not positive (the
// loop would never end), a negative lower bound (loops iterate over indices).
func.func @zero_step(%ub: index) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{'hir.for' op the step must be positive, got 0}}
  hir.for %i = %c0 to %ub step %c0 {
  }
  func.return
}

// -----

func.func @negative_lower_bound(%ub: index) {
  %lb = arith.constant -2 : index
  %c1 = arith.constant 1 : index
  // expected-error@+1 {{'hir.for' op the lower bound must be >= 0 (loops iterate over indices), got -2}}
  hir.for %i = %lb to %ub step %c1 {
  }
  func.return
}
