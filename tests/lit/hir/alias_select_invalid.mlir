// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.alias_select: the axis is in range and the result type is the base's minus that axis, with
// the remaining strides and a dynamic offset.

func.func @axis_too_large(%m: memref<4x8xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_select' op axis 2 is out of range for memref<4x8xf32> of rank 2}}
  %a = hir.alias_select %m[%i] axis 2 : memref<4x8xf32> -> memref<8xf32>
  func.return
}

// -----

func.func @negative_axis(%m: memref<4x8xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_select' op axis -1 is out of range for memref<4x8xf32> of rank 2}}
  %a = hir.alias_select %m[%i] axis -1 : memref<4x8xf32> -> memref<8xf32>
  func.return
}

// -----

func.func @missing_layout(%m: memref<4x8xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_select' op result type must be memref<8xf32, strided<[1], offset: ?>>, got memref<8xf32>}}
  %a = hir.alias_select %m[%i] axis 0 : memref<4x8xf32> -> memref<8xf32>
  func.return
}

// -----

func.func @wrong_strides(%m: memref<4x8xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_select' op result type must be memref<4xf32, strided<[8], offset: ?>>, got memref<4xf32, strided<[1], offset: ?>>}}
  %a = hir.alias_select %m[%i] axis 1 : memref<4x8xf32> -> memref<4xf32, strided<[1], offset: ?>>
  func.return
}

// -----

func.func @not_rank_reducing(%m: memref<4x8xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_select' op result type must be memref<8xf32, strided<[1], offset: ?>>, got memref<1x8xf32, strided<[8, 1], offset: ?>>}}
  %a = hir.alias_select %m[%i] axis 0 : memref<4x8xf32> -> memref<1x8xf32, strided<[8, 1], offset: ?>>
  func.return
}

// -----

func.func @static_offset(%m: memref<4x8xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_select' op result type must be memref<8xf32, strided<[1], offset: ?>>, got memref<8xf32, strided<[1]>>}}
  %a = hir.alias_select %m[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1]>>
  func.return
}

// -----

func.func @tensor_base(%t: tensor<4x8xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_select' op operand 'buffer' at position 0 does not verify:}}
  %a = "hir.alias_select"(%t, %i) <{axis = 0 : i64}> : (tensor<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}

// -----

func.func @affine_layout(%m: memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>, %i: index) {
  // expected-error@+1 {{'hir.alias_select' op operand #0 has type memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>: layout affine_map<(d0, d1) -> (d1, d0)> is not supported: a memref has the default layout or a strided<...> one}}
  %v = hir.alias_select %m[%i] axis 0 : memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}

// -----

// A constant index is checked against the axis' extent: negative indices do not wrap.
func.func @negative_constant_index(%m: memref<4x8xf32>) {
  %c = arith.constant -1 : index
  // expected-error@+1 {{'hir.alias_select' op index -1 is out of range for axis 0 of extent 4}}
  %a = hir.alias_select %m[%c] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}

// -----

func.func @constant_index_overrun(%m: memref<4x8xf32>) {
  %c = arith.constant 8 : index
  // expected-error@+1 {{'hir.alias_select' op index 8 is out of range for axis 1 of extent 8}}
  %a = hir.alias_select %m[%c] axis 1 : memref<4x8xf32> -> memref<4xf32, strided<[8], offset: ?>>
  func.return
}
