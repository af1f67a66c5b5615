// `hir-opt --help` lists the xdsl-opt flags, --list-passes, mlir-opt's debugging flags, and one flag
// per registered pass with its description and options (with the allowed values of string options).
// A wide terminal keeps each flag's help on one line (argparse wraps at $COLUMNS).
// RUN: env COLUMNS=1000 hir-opt --help | filecheck %s

// CHECK: usage: hir-opt
// CHECK-DAG: -p PASSES
// CHECK-DAG: --split-input-file
// CHECK-DAG: --verify-diagnostics
// CHECK-DAG: --parsing-diagnostics
// CHECK-DAG: --print-op-generic
// CHECK-DAG: --time-passes
// CHECK-DAG: --list-passes
// CHECK-DAG: --version
// CHECK-DAG: --pass-pipeline PIPELINE
// CHECK-DAG: --mlir-print-ir-after PASS
// CHECK-DAG: --mlir-print-ir-before PASS
// CHECK-DAG: --mlir-print-ir-after-all
// CHECK-DAG: --mlir-timing
// CHECK: pass flags
// CHECK-DAG: --canonicalize
// CHECK-DAG: --cse
// CHECK-DAG: --dce
// CHECK-DAG: --fusion-segment {{ +}}Groups fusion ops into segments (kernels). Options:
// CHECK-DAG: policy: str = standalone-host-ops (one of:
// CHECK-DAG: --stream-lowering {{ +}}Lowers fusion IR to an executable hir program.
// CHECK-DAG: chunks: int = 0; release: str = auto (one of: auto, end, start); comm-priority:
// CHECK-DAG: --hir-ring-intermediates
// CHECK-DAG: Options: join: str = caller (one of: caller, chain).
// CHECK-DAG: intermediates: str = ring (one of: ring, whole); comm-priority: str =
