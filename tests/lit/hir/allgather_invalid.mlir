// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.allgather: same rank and element type; the output is the input with `axis` scaled by the mesh size.

func.func @rank(%a: memref<8xf32>, %g: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.allgather' op allgather: buffers must have the same rank, got 8 and 2x8}}
  %w = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @axis(%a: memref<1x8xf32>, %g: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.allgather' op allgather: axis 2 is out of range for rank 2}}
  %w = hir.allgather %a into %g axis 2 mesh = [0, 1] : memref<1x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @scaled_extent(%a: memref<1x8xf32>, %g: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.allgather' op allgather: 2x8 must be 1x8 with axis 0 scaled by the mesh size 3}}
  %w = hir.allgather %a into %g axis 0 mesh = [0, 1, 2] : memref<1x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @other_extent(%a: memref<1x8xf32>, %g: memref<2x4xf32>) {
  // expected-error@+1 {{'hir.allgather' op allgather: 2x4 must be 1x8 with axis 0 scaled by the mesh size 2}}
  %w = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x8xf32>, memref<2x4xf32>
  func.return
}

// -----

func.func @element_type(%a: memref<1x8xf32>, %g: memref<2x8xf16>) {
  // expected-error@+1 {{'hir.allgather' op element types differ: f32 and f16}}
  %w = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x8xf32>, memref<2x8xf16>
  func.return
}
