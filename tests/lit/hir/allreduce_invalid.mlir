// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.allreduce: a known reduction over buffers of one shape and element type.

func.func @kind(%a: memref<8xf32>) {
  // expected-error@+1 {{'hir.allreduce' op unknown reduction 'avg', expected one of sum, max, min}}
  %w = hir.allreduce avg %a into %a mesh = [0, 1] : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @shape(%a: memref<8x8xf32>, %b: memref<1x8xf32>) {
  // expected-error@+1 {{'hir.allreduce' op allreduce buffers differ in shape: memref<8x8xf32> and memref<1x8xf32>}}
  %w = hir.allreduce sum %a into %b mesh = [0, 1] : memref<8x8xf32>, memref<1x8xf32>
  func.return
}

// -----

func.func @element_type(%a: memref<8xf32>, %b: memref<8xi32>) {
  // expected-error@+1 {{'hir.allreduce' op element types differ: f32 and i32}}
  %w = hir.allreduce max %a into %b mesh = [0, 1] : memref<8xf32>, memref<8xi32>
  func.return
}
