// RUN: hir-opt %s --split-input-file -p hir-expand-stream-loops --verify-diagnostics | filecheck %s

// The pass only runs on verified input: a malformed hir.stream_for is reported at its position
// (and nothing is expanded). Everything else is expanded: peel_first is a hint that the pass
// drops where it cannot apply (see expand.mlir), so the pass itself never fails.

func.func @worker_not_a_stream(%c: index, %main: !hir.stream) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: 'hir.stream_for' op hir.stream_for body must have exactly an index and a !hir.stream block argument
  "hir.stream_for"(%c, %c, %c, %c, %main) ({
  ^bb0(%i: index, %s: index):
    hir.yield
  }) : (index, index, index, index, !hir.stream) -> ()
  func.return
}

// -----

func.func @carried_value(%c: index, %main: !hir.stream) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: 'hir.stream_for' op hir.stream_for carries no values: its hir.yield takes no operands
  hir.stream_for %i = %c to %c step %c streams(%s) of %c from %main {
    hir.yield %i : index
  }
  func.return
}
