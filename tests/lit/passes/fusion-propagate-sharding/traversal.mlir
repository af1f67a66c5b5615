// RUN: hir-opt %s -p 'fusion-propagate-sharding{traversal=forward}' | filecheck %s --check-prefix=FWD
// RUN: hir-opt %s -p 'fusion-propagate-sharding{traversal=backward}' | filecheck %s --check-prefix=BWD
// RUN: hir-opt %s -p 'fusion-propagate-sharding{traversal=forward-backward}' | filecheck %s --check-prefix=FB
// RUN: hir-opt %s -p 'fusion-propagate-sharding{traversal=backward-forward}' | filecheck %s --check-prefix=BF

// The four traversals (MLIR's names). A value takes a sharding at most once: in forward-backward
// the forward sweep decides what it reaches and backward fills in the rest, in backward-forward
// the other way round.

// %y is reached both ways and the two disagree: forward gives it %x's rows (axis 0), backward
// the columns its consumer's result is sharded on (axis 1). The first direction decides; the
// lowering then reshards %y for the other side (an all-to-all).
// FWD-LABEL: func.func @disagree(
// FWD-NEXT:    %y = fusion.relu %x : {{.*}} -> tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// BWD-LABEL: func.func @disagree(
// BWD-NEXT:    %y = fusion.relu %x : {{.*}} -> tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
// FB-LABEL:  func.func @disagree(
// FB-NEXT:     %y = fusion.relu %x : {{.*}} -> tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// BF-LABEL:  func.func @disagree(
// BF-NEXT:     %y = fusion.relu %x : {{.*}} -> tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
func.func @disagree(%x: tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
  %y = fusion.relu %x : tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x2xf32>
  %z = fusion.exp %y : tensor<2x2xf32> -> tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %z : tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}

// %a is reached only forward (from the sharded %x; its only consumer's result %s is returned,
// so it stays as declared), %b only backward (from the sharded result %d; its operand is an
// argument). forward-backward and backward-forward shard both.
// FWD-LABEL: func.func @one_way_each(
// FWD-NEXT:    %a = fusion.relu %x : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// FWD-NEXT:    %s = fusion.sum %a dims = [1] : {{.*}} -> tensor<2xf32>{{$}}
// FWD-NEXT:    %b = fusion.neg %w : {{.*}} -> tensor<2x8xf32>{{$}}
// BWD-LABEL: func.func @one_way_each(
// BWD-NEXT:    %a = fusion.relu %x : {{.*}} -> tensor<2x8xf32>{{$}}
// BWD-NEXT:    %s = fusion.sum %a dims = [1] : {{.*}} -> tensor<2xf32>{{$}}
// BWD-NEXT:    %b = fusion.neg %w : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// FB-LABEL:  func.func @one_way_each(
// FB-NEXT:     %a = fusion.relu %x : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// FB-NEXT:     %s = fusion.sum %a dims = [1] : {{.*}} -> tensor<2xf32>{{$}}
// FB-NEXT:     %b = fusion.neg %w : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// BF-LABEL:  func.func @one_way_each(
// BF-NEXT:     %a = fusion.relu %x : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// BF-NEXT:     %s = fusion.sum %a dims = [1] : {{.*}} -> tensor<2xf32>{{$}}
// BF-NEXT:     %b = fusion.neg %w : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
func.func @one_way_each(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %w: tensor<2x8xf32>) -> (tensor<2xf32>, tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) {
  %a = fusion.relu %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  %s = fusion.sum %a dims = [1] : tensor<2x8xf32> -> tensor<2xf32>
  %b = fusion.neg %w : tensor<2x8xf32> -> tensor<2x8xf32>
  %d = fusion.tanh %b : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %s, %d : tensor<2xf32>, tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
