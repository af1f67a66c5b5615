// The checker fails on a diagnostic that no annotation expects (in a file that has annotations;
// one without any behaves like xdsl-opt, see verify_diagnostics_compat.mlir); the chunk prints
// nothing, and the other chunks still print.
// RUN: not hir-opt %s --split-input-file --verify-diagnostics 2> %t.stderr > %t.stdout
// RUN: filecheck %s --input-file %t.stderr
// RUN: filecheck %s --input-file %t.stdout --check-prefix=OUT

func.func @valid() {
  func.return
}

// -----

func.func @annotated(%m: memref<4x8xf32>, %i: index) {
  // expected-error@+1 {{axis 2 is out of range}}
  %v = hir.alias_select %m[%i] axis 2 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}

// -----

func.func @not_annotated(%m: memref<4x8xf32>, %i: index) {
  %v = hir.alias_select %m[%i] axis 3 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}

// CHECK:      verify_diagnostics_missing.mlir:[[# @LINE - 4]]:3: error: unexpected error: 'hir.alias_select' op axis 3 is out of range for memref<4x8xf32> of rank 2
// CHECK-NOT:  error:

// OUT:      func.func @valid()
// OUT-NOT:  hir.alias_select
