// Without the diagnostics flags, every chunk still runs: valid ones print, each error goes to
// stderr at its own line, and the exit status is 1.
// RUN: not hir-opt %s --split-input-file 2> %t.stderr > %t.stdout
// RUN: filecheck %s --input-file %t.stdout --check-prefix=OUT
// RUN: filecheck %s --input-file %t.stderr --check-prefix=ERR

// OUT:     func.func @first()
// OUT-NOT: func.func @bad
// OUT:     func.func @last()

// ERR-NOT: Traceback
// ERR:     {{.*}}split_input_file_errors.mlir:[[# @LINE + 10]]:3: error: 'hir.alias_select' op axis 1 is out of range
// ERR:     {{.*}}split_input_file_errors.mlir:[[# @LINE + 16]]:19: error: Expected 'to'
// ERR-NOT: Traceback
func.func @first() {
  func.return
}

// -----

func.func @bad_verify(%m: memref<4xf32>, %i: index) {
  %v = hir.alias_select %m[%i] axis 1 : memref<4xf32> -> memref<f32, strided<[], offset: ?>>
  func.return
}

// -----

func.func @bad_parse(%c: index) {
  hir.for %i = %c at %c step %c {
  }
  func.return
}

// -----

func.func @last() {
  func.return
}
