// RUN: hir-opt %s -p canonicalize,cse,dce | filecheck %s

// hir.stream and hir.num_streams are pure: duplicates merge, also across a stream switch, and
// unused ones disappear.

// CHECK-LABEL: func.func @streams(
func.func @streams(%k: index, %j: index) -> (!hir.stream, !hir.stream, !hir.stream, index, index) {
  // CHECK-NEXT: %s0 = hir.stream %k
  // CHECK-NEXT: hir.set_current_stream %s0
  // CHECK-NEXT: %s2 = hir.stream %j
  // CHECK-NEXT: %n0 = hir.num_streams
  // CHECK-NEXT: func.return %s0, %s0, %s2, %n0, %n0
  %s0 = hir.stream %k
  hir.set_current_stream %s0
  %s1 = hir.stream %k
  %s2 = hir.stream %j
  %n0 = hir.num_streams
  %n1 = hir.num_streams
  %unused = hir.stream %j
  %unused_n = hir.num_streams
  func.return %s0, %s1, %s2, %n0, %n1 : !hir.stream, !hir.stream, !hir.stream, index, index
}
