// `hir-opt --help` lists the xdsl-opt flags and one flag per registered pass.
// RUN: hir-opt --help | filecheck %s

// CHECK: usage: hir-opt
// CHECK-DAG: -p PASSES
// CHECK-DAG: --split-input-file
// CHECK-DAG: --verify-diagnostics
// CHECK-DAG: --parsing-diagnostics
// CHECK-DAG: --print-op-generic
// CHECK: pass flags
// CHECK-DAG: --canonicalize
// CHECK-DAG: --cse
// CHECK-DAG: --dce
// CHECK-DAG: --stream-lowering
