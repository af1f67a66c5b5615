// `hir-opt --help` lists the xdsl-opt flags, --list-passes, and one flag per registered pass with
// its description and options.
// RUN: hir-opt --help | filecheck %s

// CHECK: usage: hir-opt
// CHECK-DAG: -p PASSES
// CHECK-DAG: --split-input-file
// CHECK-DAG: --verify-diagnostics
// CHECK-DAG: --parsing-diagnostics
// CHECK-DAG: --print-op-generic
// CHECK-DAG: --time-passes
// CHECK-DAG: --list-passes
// CHECK: pass flags
// CHECK-DAG: --canonicalize
// CHECK-DAG: --cse
// CHECK-DAG: --dce
// CHECK-DAG: --fusion-segment {{ +}}Groups fusion ops into segments (kernels). Options:
// CHECK-DAG: policy: str = standalone-host-ops.
// CHECK-DAG: --stream-lowering {{ +}}Lowers fusion IR to an executable hir program.
// CHECK-DAG: chunks: int = 0; release: str = auto.
