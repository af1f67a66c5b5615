// An output file that cannot be created: a one-line error, exit 1, no traceback.
// RUN: not hir-opt %s -o %t.missing-dir/out.mlir 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK:     hir-opt: error: [Errno 2] No such file or directory: '{{.*}}out.mlir'
// CHECK-NOT: Traceback
func.func @f() {
  func.return
}
