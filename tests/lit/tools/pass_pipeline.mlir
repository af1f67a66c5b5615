// --pass-pipeline takes mlir-opt's anchored syntax: the -p list inside builtin.module(...) (or
// any(...)), blanks around the names allowed. It gives the same output as -p; pass flags append
// after it, as after -p.
// RUN: hir-opt %s --pass-pipeline='builtin.module(cse, stream-lowering{policy=resharding-only backend=ring})' > %t.anchored
// RUN: hir-opt %s -p 'cse,stream-lowering{policy=resharding-only backend=ring}' > %t.listed
// RUN: diff %t.anchored %t.listed
// RUN: filecheck %s --input-file %t.anchored
// RUN: hir-opt %s --pass-pipeline='any(cse)' --stream-lowering --mlir-print-ir-after=stream-lowering 2>&1 >/dev/null | filecheck %s --check-prefix=FLAG
// RUN: hir-opt %s --pass-pipeline='builtin.module()' | filecheck %s --check-prefix=EMPTY

// Errors name the flag, the column and what was expected.
// RUN: not hir-opt %s --pass-pipeline='cse,dce' 2>&1 | filecheck %s --check-prefix=UNANCHORED
// RUN: not hir-opt %s --pass-pipeline='func.func(cse)' 2>&1 | filecheck %s --check-prefix=ANCHOR
// RUN: not hir-opt %s --pass-pipeline='builtin.module(func.func(cse))' 2>&1 | filecheck %s --check-prefix=NESTED
// RUN: not hir-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | filecheck %s --check-prefix=UNCLOSED
// RUN: not hir-opt %s --pass-pipeline='builtin.module(cse))' 2>&1 | filecheck %s --check-prefix=TRAILING
// RUN: not hir-opt %s --pass-pipeline='builtin.module(strem-lowering)' 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not hir-opt %s --pass-pipeline='builtin.module(stream-lowering{backend=ucx})' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not hir-opt %s --pass-pipeline='builtin.module(cse{)' 2>&1 | filecheck %s --check-prefix=BRACE
// RUN: not hir-opt %s -p cse --pass-pipeline='builtin.module(cse)' 2>&1 | filecheck %s --check-prefix=BOTH

// CHECK:      builtin.module {
// CHECK:        hir.launch
// FLAG:       // -----// IR Dump After StreamLoweringPass (stream-lowering) //----- //
// EMPTY:      fusion.set
// UNANCHORED: hir-opt: error: malformed --pass-pipeline 'cse,dce' at column 1: expected the pipeline wrapped in its anchor op, as in 'builtin.module(cse,dce)'
// UNANCHORED-NOT: {{.}}
// ANCHOR:     hir-opt: error: malformed --pass-pipeline 'func.func(cse)' at column 1: hir-opt's passes run on the module: the anchor must be 'builtin.module', not 'func.func'
// NESTED:     hir-opt: error: malformed --pass-pipeline 'builtin.module(func.func(cse))' at column 16: nested op pipelines are not supported: hir passes are module passes, list them in builtin.module(...)
// UNCLOSED:   hir-opt: error: malformed --pass-pipeline 'builtin.module(cse' at column 19: expected ')' closing the '(' at column 15
// TRAILING:   hir-opt: error: malformed --pass-pipeline 'builtin.module(cse))' at column 20: expected the end of the pipeline after the anchor's ')'
// PASS:       hir-opt: error: --pass-pipeline: unknown pass 'strem-lowering'; did you mean 'stream-lowering'?
// VALUE:      hir-opt: error: --pass-pipeline: invalid options for pass 'stream-lowering': unknown communication backend 'ucx', expected one of nccl, copy-engine, ring
// BRACE:      hir-opt: error: malformed --pass-pipeline 'builtin.module(cse{)' at column 21: expected ')' closing the '(' at column 15
// BOTH:       hir-opt: error: -p and --pass-pipeline both give the pipeline: use one of them
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %0 = fusion.set %arg0 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %0 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
