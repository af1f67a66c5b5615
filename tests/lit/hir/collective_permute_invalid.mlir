// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.collective_permute: send and recv alike, 0 < offset < mesh size, a valid mesh, contiguous buffers.

func.func @shapes(%a: memref<16x64xf32>, %b: memref<8x64xf32>) {
  // expected-error@+1 {{'hir.collective_permute' op collective_permute: send and recv differ in shape: 16x64 and 8x64}}
  %w = hir.collective_permute %a into %b offset 1 mesh = [0, 1] : memref<16x64xf32>, memref<8x64xf32>
  func.return
}

// -----

func.func @ranks(%a: memref<16x64xf32>, %b: memref<1x16x64xf32>) {
  // expected-error@+1 {{'hir.collective_permute' op collective_permute: send and recv differ in shape: 16x64 and 1x16x64}}
  %w = hir.collective_permute %a into %b offset 1 mesh = [0, 1] : memref<16x64xf32>, memref<1x16x64xf32>
  func.return
}

// -----

func.func @element_types(%a: memref<2x8xf32>, %b: memref<2x8xf16>) {
  // expected-error@+1 {{'hir.collective_permute' op element types differ: f32 and f16}}
  %w = hir.collective_permute %a into %b offset 1 mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf16>
  func.return
}

// -----

func.func @offset_zero(%a: memref<2x8xf32>, %b: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.collective_permute' op collective_permute: offset 0 is out of range for a mesh of 2 devices (expected 0 < offset < 2)}}
  %w = hir.collective_permute %a into %b offset 0 mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @offset_mesh_size(%a: memref<2x8xf32>, %b: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.collective_permute' op collective_permute: offset 4 is out of range for a mesh of 4 devices (expected 0 < offset < 4)}}
  %w = hir.collective_permute %a into %b offset 4 mesh = [0, 1, 2, 3] : memref<2x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @offset_negative(%a: memref<2x8xf32>, %b: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.collective_permute' op collective_permute: offset -1 is out of range for a mesh of 2 devices (expected 0 < offset < 2)}}
  %w = hir.collective_permute %a into %b offset -1 mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @one_device(%a: memref<2x8xf32>, %b: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.collective_permute' op collective_permute: offset 1 is out of range for a mesh of 1 device (expected 0 < offset < 1)}}
  %w = hir.collective_permute %a into %b offset 1 mesh = [3] : memref<2x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @mesh(%a: memref<2x8xf32>, %b: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.collective_permute' op mesh must list distinct non-negative device ids, got [0, 0]}}
  %w = hir.collective_permute %a into %b offset 1 mesh = [0, 0] : memref<2x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @strided(%g: memref<8x4xf32>, %b: memref<8x2xf32>, %i: index) {
  %v = hir.alias_chunk %g[%i] axis 1 chunks 2 : memref<8x4xf32> -> memref<8x2xf32, strided<[4, 1], offset: ?>>
  // expected-error@+1 {{'hir.collective_permute' op hir.collective_permute needs contiguous buffers (the communicated axis outermost in memory), got memref<8x2xf32, strided<[4, 1], offset: ?>>}}
  %w = hir.collective_permute %v into %b offset 1 mesh = [0, 1] : memref<8x2xf32, strided<[4, 1], offset: ?>>, memref<8x2xf32>
  func.return
}
