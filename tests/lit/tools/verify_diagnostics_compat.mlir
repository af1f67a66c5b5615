// A file without a single expected-* annotation under --verify-diagnostics: xdsl-opt's behaviour,
// which scripts that pipe diagnostics into FileCheck rely on: the diagnostics go to stdout, the
// exit status is 0, and the chunks that verify still print.
// RUN: hir-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @valid() {
  func.return
}

// -----

func.func @invalid(%m: memref<4x8xf32>, %i: index) {
  %v = hir.alias_select %m[%i] axis 3 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}

// CHECK:      func.func @valid()
// CHECK:      verify_diagnostics_compat.mlir:[[# @LINE - 5]]:3: error: 'hir.alias_select' op axis 3 is out of range for memref<4x8xf32> of rank 2
