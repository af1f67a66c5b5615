// RUN: hir-opt %s --split-input-file --verify-diagnostics -p convert-fusion-to-hir | filecheck %s

// convert-fusion-to-hir alone: a computing op whose operands are sharded differently from its
// result is both a communication and a computation; fusion-decompose-resharding (the first stage
// of --stream-lowering) splits it into a resharding set and the op first.

func.func @add_on_sharded(%a: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %b: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error@+1 {{'fusion.add' op computes on operands sharded differently from its result: run fusion-decompose-resharding first (part of --stream-lowering)}}
  %c = fusion.add %a, %b : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %c : tensor<2x8xf32>
}

// -----

// The same inside a segment (made by hand): the resharding op is found among its ops.

func.func @segment_with_resharding(%a: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x8xf32> {
  // expected-error@+1 {{'fusion.segment' op computes on operands sharded differently from its result: run fusion-decompose-resharding first (part of --stream-lowering)}}
  %r = fusion.segment ins(%x = %a : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x8xf32> {
    %e = fusion.exp %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
    %n = fusion.neg %e : tensor<2x8xf32> -> tensor<2x8xf32>
    fusion.yield %n : tensor<2x8xf32>
  }
  func.return %r : tensor<2x8xf32>
}

// -----

// A plain fusion.set that reshards is a communication, not an error: it becomes a launch on
// global views, which hir-lower-communication turns into a collective.

// CHECK: func.func @set_reshards(
// CHECK: hir.launch ins({{%[a-z0-9_]+}} = %a : memref<1x8xf32> as tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) outs(%c : memref<2x8xf32>) {
// CHECK-NEXT: fusion.set {{%[a-z0-9_]+}} : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
func.func @set_reshards(%a: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x8xf32> {
  %c = fusion.set %a : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  func.return %c : tensor<2x8xf32>
}
