// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Communicated buffers must be contiguous: a strided view is accepted only when its strides are
// the row-major ones of its shape.

func.func @allgather_strided_input(%a: memref<8x8xf32>, %i: index, %g: memref<2x8xf32>) {
  %s = hir.alias_select %a[%i] axis 1 : memref<8x8xf32> -> memref<8xf32, strided<[8], offset: ?>>
  // expected-error@+1 {{'hir.allgather' op hir.allgather needs contiguous buffers (the communicated axis outermost in memory), got memref<8xf32, strided<[8], offset: ?>>}}
  %w = hir.allgather %s into %g axis 0 mesh = [0, 1] : memref<8xf32, strided<[8], offset: ?>>, memref<2x8xf32>
  func.return
}

// -----

func.func @allreduce_strided_output(%a: memref<4x4xf32>, %b: memref<4x4xf32, strided<[1, 4]>>) {
  // expected-error@+1 {{'hir.allreduce' op hir.allreduce needs contiguous buffers (the communicated axis outermost in memory), got memref<4x4xf32, strided<[1, 4]>>}}
  %w = hir.allreduce sum %a into %b mesh = [0, 1] : memref<4x4xf32>, memref<4x4xf32, strided<[1, 4]>>
  func.return
}

// -----

func.func @recv_dynamic_strides(%a: memref<4x4xf32, strided<[?, 1]>>, %peer: index) {
  // expected-error@+1 {{'hir.recv' op hir.recv needs contiguous buffers (the communicated axis outermost in memory), got memref<4x4xf32, strided<[?, 1]>>}}
  %w = hir.recv %a from %peer mesh = [0, 1] : memref<4x4xf32, strided<[?, 1]>>
  func.return
}

// -----

func.func @send_strided(%a: memref<4x4xf32, strided<[8, 2]>>, %peer: index) {
  // expected-error@+1 {{'hir.send' op hir.send needs contiguous buffers (the communicated axis outermost in memory), got memref<4x4xf32, strided<[8, 2]>>}}
  %w = hir.send %a to %peer mesh = [0, 1] : memref<4x4xf32, strided<[8, 2]>>
  func.return
}

// -----

func.func @send_affine_layout(%a: memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>, %peer: index) {
  // expected-error@+1 {{'hir.send' op buffer #0 has type memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>: layout affine_map<(d0, d1) -> (d1, d0)> is not supported: a memref has the default layout or a strided<...> one}}
  %w = hir.send %a to %peer mesh = [0, 1] : memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>
  func.return
}
