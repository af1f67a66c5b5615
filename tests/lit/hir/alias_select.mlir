// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.alias_select: a rank-reducing view with one axis fixed at an index. The result keeps the
// base's strides minus the selected axis, with a dynamic offset.

// CHECK-LABEL: func.func @select_axis0(
func.func @select_axis0(%buf: memref<4x8xf32>, %i: index) -> memref<8xf32, strided<[1], offset: ?>> {
  // CHECK-NEXT: %v = hir.alias_select %buf[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  %v = hir.alias_select %buf[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  // CHECK-NEXT: func.return %v : memref<8xf32, strided<[1], offset: ?>>
  func.return %v : memref<8xf32, strided<[1], offset: ?>>
}

// CHECK-LABEL: func.func @select_inner(
func.func @select_inner(%buf: memref<4x8x2xf32>, %i: index) -> memref<4x2xf32, strided<[16, 1], offset: ?>> {
  // CHECK-NEXT: %v = hir.alias_select %buf[%i] axis 1 : memref<4x8x2xf32> -> memref<4x2xf32, strided<[16, 1], offset: ?>>
  %v = hir.alias_select %buf[%i] axis 1 : memref<4x8x2xf32> -> memref<4x2xf32, strided<[16, 1], offset: ?>>
  // CHECK-NEXT: func.return %v : memref<4x2xf32, strided<[16, 1], offset: ?>>
  func.return %v : memref<4x2xf32, strided<[16, 1], offset: ?>>
}

// CHECK-LABEL: func.func @select_last(
func.func @select_last(%buf: memref<4x8xf32>, %i: index) -> memref<4xf32, strided<[8], offset: ?>> {
  // CHECK-NEXT: %v = hir.alias_select %buf[%i] axis 1 : memref<4x8xf32> -> memref<4xf32, strided<[8], offset: ?>>
  %v = hir.alias_select %buf[%i] axis 1 : memref<4x8xf32> -> memref<4xf32, strided<[8], offset: ?>>
  // CHECK-NEXT: func.return %v : memref<4xf32, strided<[8], offset: ?>>
  func.return %v : memref<4xf32, strided<[8], offset: ?>>
}

// A view of a view: the input is already strided.
// CHECK-LABEL: func.func @select_strided(
func.func @select_strided(%buf: memref<4x8x2xf32>, %i: index, %j: index) -> memref<2xf32, strided<[1], offset: ?>> {
  // CHECK-NEXT: %v = hir.alias_select %buf[%i] axis 0 : memref<4x8x2xf32> -> memref<8x2xf32, strided<[2, 1], offset: ?>>
  %v = hir.alias_select %buf[%i] axis 0 : memref<4x8x2xf32> -> memref<8x2xf32, strided<[2, 1], offset: ?>>
  // CHECK-NEXT: %w = hir.alias_select %v[%j] axis 0 : memref<8x2xf32, strided<[2, 1], offset: ?>> -> memref<2xf32, strided<[1], offset: ?>>
  %w = hir.alias_select %v[%j] axis 0 : memref<8x2xf32, strided<[2, 1], offset: ?>> -> memref<2xf32, strided<[1], offset: ?>>
  // CHECK-NEXT: func.return %w : memref<2xf32, strided<[1], offset: ?>>
  func.return %w : memref<2xf32, strided<[1], offset: ?>>
}

// Dynamic extents make the strides to their left dynamic.
// CHECK-LABEL: func.func @select_dynamic(
func.func @select_dynamic(%buf: memref<?x?x8xf32>, %i: index) -> memref<?x8xf32, strided<[?, 1], offset: ?>> {
  // CHECK-NEXT: %v = hir.alias_select %buf[%i] axis 1 : memref<?x?x8xf32> -> memref<?x8xf32, strided<[?, 1], offset: ?>>
  %v = hir.alias_select %buf[%i] axis 1 : memref<?x?x8xf32> -> memref<?x8xf32, strided<[?, 1], offset: ?>>
  // CHECK-NEXT: func.return %v : memref<?x8xf32, strided<[?, 1], offset: ?>>
  func.return %v : memref<?x8xf32, strided<[?, 1], offset: ?>>
}
