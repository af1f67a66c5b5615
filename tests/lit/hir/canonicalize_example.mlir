// The section 4 program is already minimal: canonicalize, cse and dce leave it unchanged (no
// stream, view, synchronization or launch is merged or dropped, nothing moves across a switch).
// RUN: hir-opt %S/../../../examples/set_stream.hir.mlir > %t.before.mlir
// RUN: hir-opt %S/../../../examples/set_stream.hir.mlir -p canonicalize,cse,dce > %t.after.mlir
// RUN: diff %t.before.mlir %t.after.mlir
// RUN: filecheck %s --input-file %t.after.mlir

// CHECK-COUNT-2: hir.for
// CHECK-NOT:     hir.for
