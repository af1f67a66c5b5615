// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.reduce_scatter: a known reduction; the input is the output with `axis` scaled by the mesh size.

func.func @kind(%a: memref<8x8xf32>, %r: memref<4x8xf32>) {
  // expected-error@+1 {{'hir.reduce_scatter' op unknown reduction 'prod', expected one of sum, max, min}}
  %w = hir.reduce_scatter prod %a into %r axis 0 mesh = [0, 1] : memref<8x8xf32>, memref<4x8xf32>
  func.return
}

// -----

func.func @scaled_extent(%a: memref<8x8xf32>, %r: memref<1x8xf32>) {
  // expected-error@+1 {{'hir.reduce_scatter' op reduce_scatter: 8x8 must be 1x8 with axis 0 scaled by the mesh size 2}}
  %w = hir.reduce_scatter sum %a into %r axis 0 mesh = [0, 1] : memref<8x8xf32>, memref<1x8xf32>
  func.return
}

// -----

func.func @dynamic_other_axis(%a: memref<?x8xf32>, %r: memref<?x8xf32>) {
  // A dynamic extent matches anything, the static one is still checked.
  // expected-error@+1 {{'hir.reduce_scatter' op reduce_scatter: ?x8 must be ?x8 with axis 1 scaled by the mesh size 2}}
  %w = hir.reduce_scatter min %a into %r axis 1 mesh = [0, 1] : memref<?x8xf32>, memref<?x8xf32>
  func.return
}

// -----

func.func @rank(%a: memref<8x8xf32>, %r: memref<32xf32>) {
  // expected-error@+1 {{'hir.reduce_scatter' op reduce_scatter: buffers must have the same rank, got 32 and 8x8}}
  %w = hir.reduce_scatter sum %a into %r axis 0 mesh = [0, 1] : memref<8x8xf32>, memref<32xf32>
  func.return
}

// -----

func.func @element_type(%a: memref<8x8xf32>, %r: memref<4x8xbf16>) {
  // expected-error@+1 {{'hir.reduce_scatter' op element types differ: f32 and bf16}}
  %w = hir.reduce_scatter sum %a into %r axis 0 mesh = [0, 1] : memref<8x8xf32>, memref<4x8xbf16>
  func.return
}
