// --version names hir's version and the xDSL and PyTorch it runs with; -v is not --version (mlir-opt
// has no -v; hir-run's -v is --verbose).
// RUN: hir-opt --version | filecheck %s
// RUN: not hir-opt -v 2>&1 | filecheck %s --check-prefix=NO-V

// CHECK:      hir {{[0-9][0-9a-z.+]*}} (hir-opt)
// CHECK-NEXT:   xDSL {{[0-9][0-9a-z.+]*}}
// CHECK-NEXT:   PyTorch {{[0-9][0-9a-z.+]*}}
// CHECK-NOT:  {{.}}

// NO-V: hir-opt: error: unrecognized arguments: -v
