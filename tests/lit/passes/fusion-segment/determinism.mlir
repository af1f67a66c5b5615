// RUN: hir-opt %s -p fusion-segment > %t.once
// RUN: hir-opt %s -p fusion-segment,fusion-segment > %t.twice
// RUN: hir-opt %s -p fusion-segment | hir-opt -p fusion-segment > %t.reparsed
// RUN: diff %t.once %t.twice
// RUN: diff %t.once %t.reparsed
// RUN: filecheck %s < %t.once
// RUN: hir-opt %s -p 'fusion-segment{policy=resharding-only}' > %t.r.once
// RUN: hir-opt %s -p 'fusion-segment{policy=resharding-only},fusion-segment{policy=resharding-only}' > %t.r.twice
// RUN: diff %t.r.once %t.r.twice
// RUN: filecheck %s --check-prefix=RESHARD < %t.r.once

// The result is deterministic and a fixpoint: segmenting again (in the same pipeline, or after
// printing and parsing) changes nothing.

// CHECK-LABEL: func.func @mixed(
// CHECK-NEXT:    %e, %n = fusion.segment ins(%x_1 = %x : tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
// CHECK-NEXT:      %e_1 = fusion.exp %x_1
// CHECK-NEXT:      %n_1 = fusion.neg %e_1
// CHECK-NEXT:      fusion.yield %e_1, %n_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %a = fusion.add %n, %y
// CHECK-NEXT:    %s = fusion.set %a
// CHECK-NEXT:    %r = fusion.relu %s
// CHECK-NEXT:    %m = fusion.mul %e, %y
// CHECK-NEXT:    %t = fusion.segment ins(%m_1 = %m : tensor<2x8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT:      %ta = fusion.tanh %m_1
// CHECK-NEXT:      %t_1 = fusion.abs %ta
// CHECK-NEXT:      fusion.yield %t_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %t

// RESHARD-LABEL: func.func @mixed(
// RESHARD-NEXT:    %a, %t = fusion.segment ins(%x_1 = %x, %y_1 = %y : tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
// RESHARD-NEXT:      %e = fusion.exp %x_1
// RESHARD-NEXT:      %n = fusion.neg %e
// RESHARD-NEXT:      %a_1 = fusion.add %n, %y_1
// RESHARD-NEXT:      %m = fusion.mul %e, %y_1
// RESHARD-NEXT:      %ta = fusion.tanh %m
// RESHARD-NEXT:      %t_1 = fusion.abs %ta
// RESHARD-NEXT:      fusion.yield %a_1, %t_1
// RESHARD-NEXT:    }
// RESHARD-NEXT:    %s = fusion.set %a
// RESHARD-NEXT:    %r = fusion.relu %s
// RESHARD-NEXT:    func.return %r, %t
func.func @mixed(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>) -> (tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32>) {
  %e = fusion.exp %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %n = fusion.neg %e : tensor<2x8xf32> -> tensor<2x8xf32>
  %a = fusion.add %n, %y : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %s = fusion.set %a : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %r = fusion.relu %s : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %m = fusion.mul %e, %y : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %ta = fusion.tanh %m : tensor<2x8xf32> -> tensor<2x8xf32>
  %t = fusion.abs %ta : tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %r, %t : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32>
}
