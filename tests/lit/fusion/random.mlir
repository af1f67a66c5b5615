// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP
// RUN: hir-opt %s -p canonicalize,cse,dce | filecheck %s --check-prefix=CSE

// fusion.random: random numbers of the result's shape, drawn from torch's generator each time the
// op runs. It reads and advances the generator's state, so cse never merges two draws and dce
// keeps a draw whose values nobody reads (it still advances the generator).

// CHECK-LABEL: func.func @uniform(
// CSE-LABEL:   func.func @uniform(
func.func @uniform() -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT: %a = fusion.random uniform : tensor<4x8xf32>
  // CHECK-NEXT: %b = fusion.random uniform : tensor<4x8xf32>
  // CSE-COUNT-2: fusion.random uniform : tensor<4x8xf32>
  // CSE:         func.return %a, %b
  %a = fusion.random uniform : tensor<4x8xf32>
  %b = fusion.random uniform : tensor<4x8xf32>
  // CHECK-NEXT: func.return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
  func.return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @normal(
// CSE-LABEL:   func.func @normal(
func.func @normal() -> tensor<2x3x4xbf16, #fusion.parallel<[stream, serial, serial]>> {
  // CHECK-NEXT: %r = fusion.random normal : tensor<2x3x4xbf16, #fusion.parallel<[stream, serial, serial]>>
  // CSE:        fusion.random normal
  // CSE:        fusion.random normal
  %r = fusion.random normal : tensor<2x3x4xbf16, #fusion.parallel<[stream, serial, serial]>>
  %unused = fusion.random normal : tensor<8xf32>
  // CHECK: func.return %r
  func.return %r : tensor<2x3x4xbf16, #fusion.parallel<[stream, serial, serial]>>
}
