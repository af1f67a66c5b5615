// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.stream: pool stream number k, from an index.

// CHECK-LABEL: func.func @stream(
func.func @stream(%k: index) -> !hir.stream {
  // CHECK-NEXT: %s = hir.stream %k
  %s = hir.stream %k
  // CHECK-NEXT: func.return %s : !hir.stream
  func.return %s : !hir.stream
}

// CHECK-LABEL: func.func @stream_round_robin(
func.func @stream_round_robin(%i: index) -> !hir.stream {
  // CHECK-NEXT: %n = hir.num_streams
  %n = hir.num_streams
  // CHECK-NEXT: %k = arith.remui %i, %n : index
  %k = arith.remui %i, %n : index
  // CHECK-NEXT: %s = hir.stream %k
  %s = hir.stream %k
  // CHECK-NEXT: func.return %s : !hir.stream
  func.return %s : !hir.stream
}

// high_priority: the high-priority pool stream of that number (a comm stream's).

// CHECK-LABEL: func.func @stream_high_priority(
func.func @stream_high_priority(%k: index) -> !hir.stream {
  // CHECK-NEXT: %s = hir.stream %k high_priority
  %s = hir.stream %k high_priority
  // CHECK-NEXT: func.return %s : !hir.stream
  func.return %s : !hir.stream
}
