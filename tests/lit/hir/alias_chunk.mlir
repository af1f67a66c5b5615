// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.alias_chunk: a view of chunk `index` of a buffer split into `chunks` parts along `axis`
// (one iteration of a stream(N) axis). Same rank, the base's strides, a dynamic offset.

// CHECK-LABEL: func.func @alias_chunk(
func.func @alias_chunk(%buf: memref<8x4xf32>, %i: index) -> memref<2x4xf32, strided<[4, 1], offset: ?>> {
  // CHECK-NEXT: %v = hir.alias_chunk %buf[%i] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
  %v = hir.alias_chunk %buf[%i] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
  // CHECK-NEXT: func.return %v : memref<2x4xf32, strided<[4, 1], offset: ?>>
  func.return %v : memref<2x4xf32, strided<[4, 1], offset: ?>>
}

// CHECK-LABEL: func.func @alias_chunk_inner(
func.func @alias_chunk_inner(%buf: memref<8x4xf32>, %i: index) -> memref<8x2xf32, strided<[4, 1], offset: ?>> {
  // CHECK-NEXT: %v = hir.alias_chunk %buf[%i] axis 1 chunks 2 : memref<8x4xf32> -> memref<8x2xf32, strided<[4, 1], offset: ?>>
  %v = hir.alias_chunk %buf[%i] axis 1 chunks 2 : memref<8x4xf32> -> memref<8x2xf32, strided<[4, 1], offset: ?>>
  // CHECK-NEXT: func.return %v : memref<8x2xf32, strided<[4, 1], offset: ?>>
  func.return %v : memref<8x2xf32, strided<[4, 1], offset: ?>>
}

// CHECK-LABEL: func.func @alias_chunk_dynamic(
func.func @alias_chunk_dynamic(%buf: memref<?x4xf32>, %i: index) -> memref<?x4xf32, strided<[4, 1], offset: ?>> {
  // CHECK-NEXT: %v = hir.alias_chunk %buf[%i] axis 0 chunks 3 : memref<?x4xf32> -> memref<?x4xf32, strided<[4, 1], offset: ?>>
  %v = hir.alias_chunk %buf[%i] axis 0 chunks 3 : memref<?x4xf32> -> memref<?x4xf32, strided<[4, 1], offset: ?>>
  // CHECK-NEXT: func.return %v : memref<?x4xf32, strided<[4, 1], offset: ?>>
  func.return %v : memref<?x4xf32, strided<[4, 1], offset: ?>>
}
