// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.broadcast: buffers of one shape and element type, an index root.

func.func @shape(%a: memref<8x8xf32>, %b: memref<1x8xf32>, %root: index) {
  // expected-error@+1 {{'hir.broadcast' op broadcast buffers differ in shape: memref<8x8xf32> and memref<1x8xf32>}}
  %w = hir.broadcast %a into %b root %root mesh = [0, 1] : memref<8x8xf32>, memref<1x8xf32>
  func.return
}

// -----

func.func @element_type(%a: memref<8xf32>, %b: memref<8xf64>, %root: index) {
  // expected-error@+1 {{'hir.broadcast' op element types differ: f32 and f64}}
  %w = hir.broadcast %a into %b root %root mesh = [0, 1] : memref<8xf32>, memref<8xf64>
  func.return
}

// -----

func.func @root_not_index(%a: memref<8xf32>, %root: i32) {
  // expected-error@+1 {{'hir.broadcast' op operand 'root' at position 2 does not verify:}}
  %w = "hir.broadcast"(%a, %a, %root) <{mesh = array<i64: 0, 1>}> : (memref<8xf32>, memref<8xf32>, i32) -> !hir.work
  func.return
}

// -----

func.func @root_out_of_range(%a: memref<8xf32>, %b: memref<8xf32>) {
  %c2 = arith.constant 2 : index
  // expected-error@+1 {{'hir.broadcast' op broadcast: root 2 is out of range for a mesh of 2 devices (a position in the mesh, 0 to 1)}}
  %w = hir.broadcast %a into %b root %c2 mesh = [0, 1] : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @negative_root(%a: memref<8xf32>, %b: memref<8xf32>) {
  %c = arith.constant -1 : index
  // expected-error@+1 {{'hir.broadcast' op broadcast: root -1 is out of range for a mesh of 2 devices}}
  %w = hir.broadcast %a into %b root %c mesh = [0, 1] : memref<8xf32>, memref<8xf32>
  func.return
}
