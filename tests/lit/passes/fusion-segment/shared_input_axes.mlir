// RUN: hir-opt %s -p 'fusion-segment{policy=resharding-only}' | filecheck %s
// RUN: hir-opt %s -p 'stream-lowering{policy=contractions-with-epilogues}' | filecheck %s --check-prefix=LOWER

// One stream loop slices each value once, so ops that read the same value on different axes stay
// in different segments even where every producer->consumer edge inside the group corresponds:
// here %a is read on axis 1 by the permute and on axis 0 by the add.

// CHECK-LABEL: func.func @transpose_plus_self(
// CHECK-NEXT:  %a = fusion.exp %x
// CHECK-NEXT:  %t = fusion.permute %a perm = [1, 0]
// CHECK-NEXT:  %b = fusion.add %t, %a
// CHECK-NEXT:  func.return %b
// LOWER-LABEL: func.func @transpose_plus_self(
// LOWER-COUNT-3: hir.launch
// LOWER-NOT:   hir.launch
// LOWER:       func.return
func.func @transpose_plus_self(%x: tensor<4x4xf32>) -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>> {
  %a = fusion.exp %x : tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  %t = fusion.permute %a perm = [1, 0] : tensor<4x4xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  %b = fusion.add %t, %a : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>, tensor<4x4xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  func.return %b : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
}

// Read on the same axis by both: one segment.
// CHECK-LABEL: func.func @same_axis_twice(
// CHECK:       %b = fusion.segment ins(%x_1 = %x : tensor<4x4xf32>)
// CHECK-NEXT:    fusion.exp %x_1
// CHECK-NEXT:    fusion.add %a, %x_1
func.func @same_axis_twice(%x: tensor<4x4xf32>) -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>> {
  %a = fusion.exp %x : tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  %b = fusion.add %a, %x : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>, tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  func.return %b : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
}
