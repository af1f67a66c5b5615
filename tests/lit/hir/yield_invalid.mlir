// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.yield only terminates hir.for, hir.stream_for and hir.launch.

func.func @in_func() {
  // expected-error@+1 {{'hir.yield' op 'hir.yield' expects parent op to be one of 'hir.for', 'hir.stream_for', 'hir.launch'}}
  hir.yield
}

// -----

func.func @not_last(%c: index) {
  hir.for %i = %c to %c step %c {
    // expected-error@+1 {{'hir.yield' op 'hir.yield' must be the last operation in its parent block}}
    "hir.yield"() : () -> ()
    %n = hir.num_streams
  }
  func.return
}
