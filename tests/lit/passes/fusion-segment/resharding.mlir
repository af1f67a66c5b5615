// RUN: hir-opt %s -p fusion-segment | filecheck %s --check-prefixes=CHECK,DEFAULT
// RUN: hir-opt %s -p 'fusion-segment{policy=resharding-only}' | filecheck %s --check-prefixes=CHECK,RESHARD

// A resharding op (an operand's didx axis or mesh differs from the result's) is a communication:
// it never joins a segment, whatever the policy.

// CHECK-LABEL: func.func @scatter_between_chains(
func.func @scatter_between_chains(%x: tensor<2x8xf32>) -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %n = fusion.segment ins(%x_1 = %x : tensor<2x8xf32>) -> tensor<2x8xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1 : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK-NEXT:   %n_1 = fusion.neg %e : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK-NEXT:   fusion.yield %n_1 : tensor<2x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: %s = fusion.set %n : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  // CHECK-NEXT: %a = fusion.segment ins(%s_1 = %s : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // CHECK-NEXT:   %r = fusion.relu %s_1
  // CHECK-NEXT:   %a_1 = fusion.abs %r
  // CHECK-NEXT:   fusion.yield %a_1
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %a
  %e = fusion.exp %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %n = fusion.neg %e : tensor<2x8xf32> -> tensor<2x8xf32>
  %s = fusion.set %n : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %r = fusion.relu %s : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %a = fusion.abs %r : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %a : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// Any op can reshard, not only fusion.set: here a neg whose result is sharded.
// CHECK-LABEL: func.func @resharding_unary(
func.func @resharding_unary(%x: tensor<2x8xf32>) -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %e = fusion.exp %x : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK-NEXT: %n = fusion.neg %e : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  // CHECK-NEXT: %r = fusion.relu %n
  // CHECK-NEXT: func.return %r
  %e = fusion.exp %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %n = fusion.neg %e : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %r = fusion.relu %n : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %r : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// Another didx axis or another mesh is resharding too; so is one operand of a binary op.
// CHECK-LABEL: func.func @axis_mesh_operand(
func.func @axis_mesh_operand(%x: tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %y: tensor<2x2xf32>) -> (tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [1, 0]>>, tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) {
  // CHECK-NEXT: %e = fusion.exp %x
  // CHECK-NEXT: %t = fusion.set %e : tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  // CHECK-NEXT: %m = fusion.set %e : tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [1, 0]>>
  // CHECK-NEXT: %a = fusion.add %e, %y
  // CHECK-NEXT: func.return %t, %m, %a
  %e = fusion.exp %x : tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %t = fusion.set %e : tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  %m = fusion.set %e : tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [1, 0]>>
  %a = fusion.add %e, %y : tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x2xf32> -> tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %t, %m, %a : tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [1, 0]>>, tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// A set that keeps the sharding is a plain copy: standalone under the default policy, fused
// under resharding-only.
// CHECK-LABEL: func.func @local_set(
func.func @local_set(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // DEFAULT-NEXT: %e = fusion.exp %x
  // DEFAULT-NEXT: %s = fusion.set %e
  // DEFAULT-NEXT: func.return %s
  // RESHARD-NEXT: %s = fusion.segment ins(%x_1 = %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>)
  // RESHARD-NEXT:   %e = fusion.exp %x_1
  // RESHARD-NEXT:   %s_1 = fusion.set %e
  // RESHARD-NEXT:   fusion.yield %s_1
  // RESHARD-NEXT: }
  // RESHARD-NEXT: func.return %s
  %e = fusion.exp %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %s = fusion.set %e : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %s : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
