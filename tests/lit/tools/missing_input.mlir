// A missing input file: a one-line error, exit 1, no traceback.
// RUN: not hir-opt %t.does-not-exist.mlir 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK:     hir-opt: error: [Errno 2] No such file or directory: '{{.*}}does-not-exist.mlir'
// CHECK-NOT: Traceback
