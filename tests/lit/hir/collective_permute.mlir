// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.collective_permute: every device of the mesh sends `send` to the device `offset` positions
// later (cyclically) and receives into `recv` from the one `offset` positions earlier.

// CHECK-LABEL: func.func @ring_step(
func.func @ring_step(%a: memref<16x64xf32>, %b: memref<16x64xf32>) -> !hir.work {
  // CHECK-NEXT: %w = hir.collective_permute %a into %b offset 1 mesh = [0, 1, 2, 3] : memref<16x64xf32>, memref<16x64xf32>
  %w = hir.collective_permute %a into %b offset 1 mesh = [0, 1, 2, 3] : memref<16x64xf32>, memref<16x64xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}

// A chunk of a gathered buffer (contiguous: its axis is outermost), a dynamic extent, offset 3.

// CHECK-LABEL: func.func @chunks(
func.func @chunks(%a: memref<?x64xbf16>, %g: memref<4x8x64xbf16>, %slot: index) -> !hir.work {
  %c = hir.alias_select %g[%slot] axis 0 : memref<4x8x64xbf16> -> memref<8x64xbf16, strided<[64, 1], offset: ?>>
  // CHECK: %w = hir.collective_permute %a into %c offset 3 mesh = [0, 1, 2, 3] : memref<?x64xbf16>, memref<8x64xbf16, strided<[64, 1], offset: ?>>
  %w = hir.collective_permute %a into %c offset 3 mesh = [0, 1, 2, 3] : memref<?x64xbf16>, memref<8x64xbf16, strided<[64, 1], offset: ?>>
  func.return %w : !hir.work
}

// Waited for like the other collectives.

// CHECK-LABEL: func.func @waited(
func.func @waited(%a: memref<1x8xi32>, %b: memref<1x8xi32>) {
  // CHECK-NEXT: %w = hir.collective_permute %a into %b offset 1 mesh = [2, 5] : memref<1x8xi32>, memref<1x8xi32>
  // CHECK-NEXT: hir.wait %w
  %w = hir.collective_permute %a into %b offset 1 mesh = [2, 5] : memref<1x8xi32>, memref<1x8xi32>
  hir.wait %w
  func.return
}
