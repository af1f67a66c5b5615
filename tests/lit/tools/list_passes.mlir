// --list-passes prints every pass with a one-line description and its options (type = default);
// a pipeline pass also lists its stages.
// RUN: hir-opt --list-passes | filecheck %s

// CHECK:      Passes (-p 'name{option=value ...},name', or --name to append one without options):
// CHECK-NEXT:   canonicalize {{ +}}Applies all canonicalization patterns.
// CHECK-NEXT:   cse {{ +}}Eliminates common subexpressions.
// CHECK-NEXT:   dce {{ +}}Erases operations
// CHECK:        fusion-segment {{ +}}Groups fusion ops into segments (kernels).
// CHECK-NEXT:       policy: str = standalone-host-ops
// CHECK:        hir-lower-communication {{ +}}Resharding launches become collectives
// CHECK-NEXT:       backend: str = nccl
// CHECK-NEXT:       chunks: int = 0
// CHECK-NEXT:       release: str = auto
// CHECK:        hir-expand-stream-loops {{ +}}Lowers every `hir.stream_for`
// CHECK-NEXT:   stream-lowering {{ +}}Lowers fusion IR to an executable hir program.
// CHECK-NEXT:       policy: str = standalone-host-ops
// CHECK-NEXT:       backend: str = nccl
// CHECK-NEXT:       chunks: int = 0
// CHECK-NEXT:       release: str = auto
// CHECK-NEXT:       stages: fusion-decompose-resharding, fusion-segment, convert-fusion-to-hir, hir-loop-fusion, hir-lower-communication, hir-expand-stream-loops, cse
