// --print-between-passes prints the IR after every pass but the last, and after each stage of a
// pipeline pass (verified after each, too).
// RUN: hir-opt %s --stream-lowering --print-between-passes | filecheck %s

// CHECK:      IR after fusion-decompose-resharding:
// CHECK-NEXT: builtin.module {
// CHECK:        fusion.set
// CHECK:      IR after fusion-segment:
// CHECK:      IR after convert-fusion-to-hir:
// CHECK:        hir.stream_for
// CHECK:        hir.launch
// CHECK:      IR after hir-loop-fusion:
// CHECK:      IR after hir-lower-communication:
// CHECK:      IR after hir-expand-stream-loops:
// CHECK:        hir.for
// CHECK-NOT:  IR after
// The result.
// CHECK:      builtin.module {
// CHECK:        hir.launch
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %0 = fusion.set %arg0 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %0 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
