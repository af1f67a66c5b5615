// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.allocate makes contiguous buffers, with one size operand per dynamic extent.

func.func @layout() {
  // expected-error@+1 {{'hir.allocate' op hir.allocate makes contiguous buffers; drop the layout of memref<4x8xf32, strided<[8, 1]>>}}
  %b = hir.allocate() : memref<4x8xf32, strided<[8, 1]>>
  func.return
}

// -----

func.func @missing_size() {
  // expected-error@+1 {{'hir.allocate' op memref<?x8xf32> has 1 dynamic extents but 0 sizes are given}}
  %b = hir.allocate() : memref<?x8xf32>
  func.return
}

// -----

func.func @extra_size(%n: index) {
  // expected-error@+1 {{'hir.allocate' op memref<4x8xf32> has 0 dynamic extents but 1 sizes are given}}
  %b = hir.allocate(%n) : memref<4x8xf32>
  func.return
}

// -----

func.func @size_not_index(%n: i64) {
  // expected-error@+1 {{'hir.allocate' op operand 'dynamic_sizes' at position 0 does not verify:}}
  %b = "hir.allocate"(%n) : (i64) -> memref<?xf32>
  func.return
}

// -----

func.func @not_a_memref() {
  // expected-error@+1 {{'hir.allocate' op result 'result' at position 0 does not verify:}}
  %b = "hir.allocate"() : () -> tensor<4xf32>
  func.return
}
