// --mlir-print-ir-before=PASS and --mlir-print-ir-after=PASS, as mlir-opt's: the flag repeats and
// takes comma-separated names. A pipeline pass (stream-lowering) dumps before its first stage and
// after its last; a stage's name dumps around that stage inside it, and around the pass of that
// name elsewhere in the pipeline. Dumps go to stderr, in the order the passes run.
// RUN: hir-opt %s -p cse --stream-lowering --mlir-print-ir-before=stream-lowering,hir-loop-fusion --mlir-print-ir-after cse --mlir-print-ir-after=stream-lowering 2>%t.dumps >%t.mlir
// RUN: filecheck %s --input-file %t.dumps
// RUN: hir-opt %t.mlir | filecheck %s --check-prefix=IR
// --print-op-generic applies to the dumps too.
// RUN: hir-opt %s -p cse --mlir-print-ir-after=cse --print-op-generic 2>&1 >/dev/null | filecheck %s --check-prefix=GENERIC
// A name the pipeline does not run prints nothing, with a warning; an unknown name is an error
// before any input is read.
// RUN: hir-opt %s -p cse --mlir-print-ir-after=dce 2>&1 >/dev/null | filecheck %s --check-prefix=UNUSED
// RUN: not hir-opt %s -p cse --mlir-print-ir-after=strem-lowering 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not hir-opt %s -p cse --mlir-print-ir-before=cse,,dce 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: not hir-opt %s -p cse --mlir-print-ir-after 2>&1 | filecheck %s --check-prefix=MISSING

// The top-level cse ran first.
// CHECK:      // -----// IR Dump After CommonSubexpressionElimination (cse) //----- //
// CHECK-NEXT: builtin.module {
// CHECK:        fusion.set
// CHECK:      // -----// IR Dump Before StreamLoweringPass (stream-lowering) //----- //
// CHECK:        fusion.set
// CHECK:      // -----// IR Dump Before HirLoopFusionPass (hir-loop-fusion) //----- //
// CHECK:        hir.stream_for
// stream-lowering's own cse stage, then stream-lowering's end.
// CHECK:      // -----// IR Dump After CommonSubexpressionElimination (cse) //----- //
// CHECK:      // -----// IR Dump After StreamLoweringPass (stream-lowering) //----- //
// CHECK:        hir.launch
// CHECK-NOT:  IR Dump

// IR:         hir.launch
// IR-NOT:     IR Dump

// GENERIC:    // -----// IR Dump After CommonSubexpressionElimination (cse) //----- //
// GENERIC-NEXT: "builtin.module"() ({

// UNUSED:     hir-opt: warning: no pass of the pipeline is named 'dce': no IR printed for it
// UNUSED-NOT: IR Dump
// UNKNOWN:    hir-opt: error: --mlir-print-ir-after: unknown pass 'strem-lowering'; did you mean 'stream-lowering'? (available passes: canonicalize, cse, dce,
// EMPTY:      hir-opt: error: --mlir-print-ir-before: unknown pass '' (an empty name) (available passes:
// MISSING:    hir-opt: error: argument --mlir-print-ir-after: expected one argument
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %0 = fusion.set %arg0 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %0 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
