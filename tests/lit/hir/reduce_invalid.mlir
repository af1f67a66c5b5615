// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.reduce: buffers of one shape and element type, contiguous, a known reduction, an index
// root, a mesh of distinct devices.

func.func @shape(%a: memref<8x8xf32>, %b: memref<1x8xf32>, %root: index) {
  // expected-error@+1 {{'hir.reduce' op reduce buffers differ in shape: memref<8x8xf32> and memref<1x8xf32>}}
  %w = hir.reduce sum %a into %b root %root mesh = [0, 1] : memref<8x8xf32>, memref<1x8xf32>
  func.return
}

// -----

func.func @element_type(%a: memref<8xf32>, %b: memref<8xf64>, %root: index) {
  // expected-error@+1 {{'hir.reduce' op element types differ: f32 and f64}}
  %w = hir.reduce sum %a into %b root %root mesh = [0, 1] : memref<8xf32>, memref<8xf64>
  func.return
}

// -----

func.func @kind(%a: memref<8xf32>, %root: index) {
  // expected-error@+1 {{'hir.reduce' op unknown reduction 'prod', expected one of sum, max, min}}
  %w = hir.reduce prod %a into %a root %root mesh = [0, 1] : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @root_not_index(%a: memref<8xf32>, %root: i32) {
  // expected-error@+1 {{'hir.reduce' op operand 'root' at position 2 does not verify:}}
  %w = "hir.reduce"(%a, %a, %root) <{mesh = array<i64: 0, 1>, kind = "sum"}> : (memref<8xf32>, memref<8xf32>, i32) -> !hir.work
  func.return
}

// -----

func.func @strided(%a: memref<8x4xf32>, %b: memref<8xf32>, %root: index, %j: index) {
  %col = hir.alias_select %a[%j] axis 1 : memref<8x4xf32> -> memref<8xf32, strided<[4], offset: ?>>
  // expected-error@+1 {{'hir.reduce' op hir.reduce needs contiguous buffers (the communicated axis outermost in memory), got memref<8xf32, strided<[4], offset: ?>>}}
  %w = hir.reduce sum %col into %b root %root mesh = [0, 1] : memref<8xf32, strided<[4], offset: ?>>, memref<8xf32>
  func.return
}

// -----

func.func @mesh(%a: memref<8xf32>, %root: index) {
  // expected-error@+1 {{'hir.reduce' op mesh must list distinct non-negative device ids, got [1, 1]}}
  %w = hir.reduce sum %a into %a root %root mesh = [1, 1] : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @root_out_of_range(%a: memref<8xf32>, %b: memref<8xf32>) {
  %c5 = arith.constant 5 : index
  // expected-error@+1 {{'hir.reduce' op reduce: root 5 is out of range for a mesh of 2 devices (a position in the mesh, 0 to 1)}}
  %w = hir.reduce sum %a into %b root %c5 mesh = [0, 1] : memref<8xf32>, memref<8xf32>
  func.return
}
