// RUN: hir-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Syntax errors in the custom forms of the other hir ops and types.

func.func @alias_select_missing_axis(%m: memref<4x8xf32>, %i: index) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:32: error: Expected 'axis'
  %v = hir.alias_select %m[%i] 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}

// -----

func.func @allocate_missing_parens() {
  // CHECK: {{.*}}:[[# @LINE + 1]]:21: error: Expected '('
  %b = hir.allocate : memref<4xf32>
  func.return
}

// -----

func.func @for_missing_to(%c: index) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:19: error: Expected 'to'
  hir.for %i = %c %c step %c {
  }
  func.return
}

// -----

func.func @for_missing_step(%c: index) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:25: error: Expected 'step'
  hir.for %i = %c to %c {
  }
  func.return
}

// -----

func.func @allgather_missing_mesh(%a: memref<1x8xf32>, %g: memref<2x8xf32>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:40: error: Expected 'mesh'
  %w = hir.allgather %a into %g axis 0 : memref<1x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @allreduce_missing_kind(%a: memref<8xf32>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:22: error: identifier expected
  %w = hir.allreduce %a into %a mesh = [0, 1] : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:39: error: 'hir.event' is not registered
func.func @unknown_type(%e: !hir.event) {
  func.return
}

// -----

func.func @stream_for_without_caller(%c: index) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:58: error: Expected 'from'
  hir.stream_for %i = %c to %c step %c streams(%s) of %c {
  }
  func.return
}
