// --mlir-print-ir-after-all dumps the IR after every pass, a pipeline pass's stages included, each
// under mlir-opt's header naming the pass; --mlir-print-ir-before-all before each. The dumps go to
// stderr: stdout holds only the result, which parses.
// RUN: hir-opt %s --stream-lowering --mlir-print-ir-after-all 2>%t.after >%t.mlir
// RUN: filecheck %s --input-file %t.after
// RUN: hir-opt %t.mlir | filecheck %s --check-prefix=IR
// RUN: hir-opt %s -p cse,dce --mlir-print-ir-before-all 2>&1 >/dev/null | filecheck %s --check-prefix=BEFORE

// CHECK:      // -----// IR Dump After StreamOverlapPass (fusion-stream-overlap) //----- //
// CHECK-NEXT: builtin.module {
// CHECK:        fusion.set
// CHECK:      // -----// IR Dump After DecomposeReshardingPass (fusion-decompose-resharding) //----- //
// CHECK:      // -----// IR Dump After FusionSegmentPass (fusion-segment) //----- //
// CHECK:      // -----// IR Dump After ConvertFusionToHirPass (convert-fusion-to-hir) //----- //
// CHECK:        hir.stream_for
// CHECK:      // -----// IR Dump After HirLoopFusionPass (hir-loop-fusion) //----- //
// CHECK:      // -----// IR Dump After LowerCommunicationPass (hir-lower-communication) //----- //
// CHECK:      // -----// IR Dump After RingIntermediatesPass (hir-ring-intermediates) //----- //
// CHECK:      // -----// IR Dump After ExpandStreamLoopsPass (hir-expand-stream-loops) //----- //
// CHECK:        hir.for
// CHECK:      // -----// IR Dump After CommonSubexpressionElimination (cse) //----- //
// CHECK-NOT:  IR Dump

// IR:         builtin.module {
// IR:           hir.launch
// IR-NOT:     IR Dump

// BEFORE:     // -----// IR Dump Before CommonSubexpressionElimination (cse) //----- //
// BEFORE-NEXT: builtin.module {
// BEFORE:     // -----// IR Dump Before DeadCodeElimination (dce) //----- //
// BEFORE-NOT: IR Dump
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %0 = fusion.set %arg0 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %0 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
