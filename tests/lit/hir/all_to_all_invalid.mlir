// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.all_to_all: the output is the input with the split axis divided and the concat axis
// multiplied by the mesh size; the split axis divides by it.

func.func @shapes(%a: memref<1x4x16xf32>, %b: memref<4x4x16xf32>) {
  // expected-error@+1 {{'hir.all_to_all' op all_to_all: 4x4x16 must be 1x4x16 with axis 1 divided and axis 0 multiplied by the mesh size 4}}
  %w = hir.all_to_all %a into %b split_axis 1 concat_axis 0 mesh = [0, 1, 2, 3] : memref<1x4x16xf32>, memref<4x4x16xf32>
  func.return
}

// -----

func.func @not_dividing(%a: memref<1x3x16xf32>, %b: memref<2x1x16xf32>) {
  // expected-error@+1 {{'hir.all_to_all' op all_to_all: split axis 1 has extent 3, not a multiple of the mesh size 2}}
  %w = hir.all_to_all %a into %b split_axis 1 concat_axis 0 mesh = [0, 1] : memref<1x3x16xf32>, memref<2x1x16xf32>
  func.return
}

// -----

func.func @axis_range(%a: memref<2x8xf32>, %b: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.all_to_all' op all_to_all: concat_axis 2 is out of range for rank 2}}
  %w = hir.all_to_all %a into %b split_axis 0 concat_axis 2 mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @element_types(%a: memref<2x8xf32>, %b: memref<2x8xf16>) {
  // expected-error@+1 {{'hir.all_to_all' op element types differ: f32 and f16}}
  %w = hir.all_to_all %a into %b split_axis 0 concat_axis 0 mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf16>
  func.return
}

// -----

func.func @split_axis_inside(%a: memref<2x4x16xf32>, %b: memref<4x2x16xf32>) {
  // expected-error@+1 {{'hir.all_to_all' op all_to_all: the split axis 1 must be outermost in memory (only extents of 1 before it), got 2x4x16}}
  %w = hir.all_to_all %a into %b split_axis 1 concat_axis 0 mesh = [0, 1] : memref<2x4x16xf32>, memref<4x2x16xf32>
  func.return
}
