// RUN: hir-opt %s -p 'fusion-segment{policy=resharding-only}' | filecheck %s

// exp -> X -> add and exp -> add: merging exp with add would need X inside the kernel too
// (X both consumes exp's result and feeds add), but X may not join, so exp and add stay apart:
// merges never create a cycle between segments.

// X is stream-parallel, exp and add are not: X joins neither; add and tanh fuse.
// CHECK-LABEL: func.func @stream_in_the_middle(
func.func @stream_in_the_middle(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %s = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: %t = fusion.segment ins(%e_1 = %e, %s_1 = %s : tensor<4x8xf32>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>>) -> tensor<4x8xf32> {
  // CHECK-NEXT:   %a = fusion.add %e_1, %s_1 : tensor<4x8xf32>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32>
  // CHECK-NEXT:   %t_1 = fusion.tanh %a : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   fusion.yield %t_1 : tensor<4x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %t : tensor<4x8xf32>
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %a = fusion.add %e, %s : tensor<4x8xf32>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32>
  %t = fusion.tanh %a : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %t : tensor<4x8xf32>
}

// X is a pair of resharding sets (scatter, then gather back), which never join anything.
// CHECK-LABEL: func.func @resharding_in_the_middle(
func.func @resharding_in_the_middle(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // CHECK-NEXT: %e = fusion.exp %x : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK-NEXT: %d = fusion.set %e : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  // CHECK-NEXT: %g = fusion.set %d : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  // CHECK-NEXT: %a = fusion.add %e, %g : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK-NEXT: func.return %a : tensor<2x8xf32>
  %e = fusion.exp %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %d = fusion.set %e : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %g = fusion.set %d : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  %a = fusion.add %e, %g : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %a : tensor<2x8xf32>
}

// Without the path through X the same pair fuses.
// CHECK-LABEL: func.func @no_middle(
func.func @no_middle(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // CHECK-NEXT: %a = fusion.segment ins(%x_1 = %x : tensor<2x8xf32>) -> tensor<2x8xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1 : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK-NEXT:   %a_1 = fusion.add %e, %x_1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK-NEXT:   fusion.yield %a_1 : tensor<2x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %a : tensor<2x8xf32>
  %e = fusion.exp %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %a = fusion.add %e, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %a : tensor<2x8xf32>
}
