// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Syntax errors in the custom forms of the other hir ops and types.

func.func @alias_select_missing_axis(%m: memref<4x8xf32>, %i: index) {
  // expected-error@+1 {{Expected 'axis'}}
  %v = hir.alias_select %m[%i] 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}

// -----

func.func @allocate_missing_parens() {
  // expected-error@+1 {{Expected '('}}
  %b = hir.allocate : memref<4xf32>
  func.return
}

// -----

func.func @for_missing_to(%c: index) {
  // expected-error@+1 {{Expected 'to'}}
  hir.for %i = %c %c step %c {
  }
  func.return
}

// -----

func.func @for_missing_step(%c: index) {
  // expected-error@+1 {{Expected 'step'}}
  hir.for %i = %c to %c {
  }
  func.return
}

// -----

func.func @allgather_missing_mesh(%a: memref<1x8xf32>, %g: memref<2x8xf32>) {
  // expected-error@+1 {{Expected 'mesh'}}
  %w = hir.allgather %a into %g axis 0 : memref<1x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @allreduce_missing_kind(%a: memref<8xf32>) {
  // expected-error@+1 {{identifier expected}}
  %w = hir.allreduce %a into %a mesh = [0, 1] : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

// expected-error@+1 {{'hir.event' is not registered}}
func.func @unknown_type(%e: !hir.event) {
  func.return
}

// -----

func.func @stream_for_without_caller(%c: index) {
  // expected-error@+1 {{Expected 'from'}}
  hir.stream_for %i = %c to %c step %c streams(%s) of %c {
  }
  func.return
}
