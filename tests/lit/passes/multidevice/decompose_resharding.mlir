// RUN: hir-opt %s -p fusion-decompose-resharding | filecheck %s
// RUN: hir-opt %s -p fusion-decompose-resharding,fusion-decompose-resharding | filecheck %s

// fusion-decompose-resharding alone: a computing op whose operand is sharded differently from its
// result gets a resharding fusion.set on that operand. The set keeps the operand's shape; its axes
// are didx where they feed the result's didx axis, stream (with the same chunks) where they feed
// the result's stream axis, serial otherwise; its mesh is the result's, else the operand's. The op
// then computes locally. Pure communications (a set, a sum over the didx axis) and ops that
// already compute locally are left alone; a second run changes nothing.

// AG+GEMM: A's didx axis feeds no result axis that is sharded; axis 0 feeds the result's stream axis.
// CHECK-LABEL: func.func @ag_matmul(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %[[B:[a-z0-9_]+]]: tensor<256x128xf32>
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = fusion.set %[[A]] : tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> -> tensor<4x2x64x256xf32, #fusion.parallel<[stream, serial, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %[[C:[a-z0-9_]+]] = fusion.matmul %[[G]], %[[B]] : tensor<4x2x64x256xf32, #fusion.parallel<[stream, serial, serial, serial], mesh = [0, 1]>>, tensor<256x128xf32> -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
// CHECK-NEXT:    func.return %[[C]]
func.func @ag_matmul(%a: tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<256x128xf32>) -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<256x128xf32> -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %c : tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}

// AG+linear: only X is resharded; the weight and the bias are untouched.
// CHECK-LABEL: func.func @ag_linear(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %[[W:[a-z0-9_]+]]: tensor<48x64xf32>, %[[BIAS:[a-z0-9_]+]]: tensor<48xf32>
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = fusion.set %[[X]] : {{.*}} -> tensor<4x2x32x64xf32, #fusion.parallel<[stream, serial, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.linear %[[G]], %[[W]], %[[BIAS]] :
// CHECK-NEXT:    func.return
func.func @ag_linear(%x: tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %w: tensor<48x64xf32>, %bias: tensor<48xf32>) -> tensor<4x2x32x48xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  %y = fusion.linear %x, %w, %bias : tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<48x64xf32>, tensor<48xf32> -> tensor<4x2x32x48xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %y : tensor<4x2x32x48xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}

// stream(N) on the result: the set's stream axis gets the same number of chunks.
// CHECK-LABEL: func.func @chunks(
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = fusion.set %{{.*}} : {{.*}} -> tensor<8x2x16x32xf32, #fusion.parallel<[stream(4), serial, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.matmul %[[G]], %{{.*}} : tensor<8x2x16x32xf32, #fusion.parallel<[stream(4), serial, serial, serial], mesh = [0, 1]>>, tensor<32x24xf32>
func.func @chunks(%a: tensor<8x2x16x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<32x24xf32>) -> tensor<8x2x16x24xf32, #fusion.parallel<[stream(4), serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<8x2x16x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<32x24xf32> -> tensor<8x2x16x24xf32, #fusion.parallel<[stream(4), serial, serial, serial]>>
  func.return %c : tensor<8x2x16x24xf32, #fusion.parallel<[stream(4), serial, serial, serial]>>
}

// No stream axis, result replicated on the mesh: every operand that is sharded gets its own set.
// CHECK-LABEL: func.func @both_operands(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %[[Y:[a-z0-9_]+]]: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %[[GX:[a-z0-9_]+]] = fusion.set %[[X]] : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %[[GY:[a-z0-9_]+]] = fusion.set %[[Y]] : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.mul %[[GX]], %[[GY]] : tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
func.func @both_operands(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %y: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %z = fusion.mul %x, %y : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %z : tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}

// A result without a mesh: the set takes the operand's mesh.
// CHECK-LABEL: func.func @result_without_mesh(
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = fusion.set %{{.*}} : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.add %[[G]], %{{.*}} : tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x8xf32> -> tensor<2x8xf32>
func.func @result_without_mesh(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %y: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %z = fusion.add %x, %y : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %z : tensor<2x8xf32>
}

// A result sharded where the operand is not: the set shards the operand first (a scatter, which
// hir-lower-communication then reports), so that the op computes locally.
// CHECK-LABEL: func.func @sharded_result(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<2x8xf32>
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = fusion.set %[[X]] : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.relu %[[G]] : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
func.func @sharded_result(%x: tensor<2x8xf32>) -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %z = fusion.relu %x : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %z : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// Left alone: a row-parallel matmul (both K axes sharded, the result's didx axis fed by both),
// the partial sum over the didx axis after it, a resharding set, and a local elementwise op.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NEXT:    %[[P:[a-z0-9_]+]] = fusion.matmul %{{.*}}, %{{.*}} :
// CHECK-NEXT:    %[[C:[a-z0-9_]+]] = fusion.sum %[[P]] dims = [1] :
// CHECK-NEXT:    %[[R:[a-z0-9_]+]] = fusion.relu %[[C]] :
// CHECK-NEXT:    %[[S:[a-z0-9_]+]] = fusion.set %{{.*}} : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %[[R]], %[[S]]
func.func @left_alone(%a: tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<2x64x48xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> (tensor<4x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>, tensor<2x8xf32>) {
  %p = fusion.matmul %a, %b : tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x64x48xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<4x2x32x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<4x2x32x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<4x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  %r = fusion.relu %c : tensor<4x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>> -> tensor<4x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  %s = fusion.set %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  func.return %r, %s : tensor<4x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>, tensor<2x8xf32>
}

// A contraction over a sharded K (no sum over the devices written): each device holds only its
// slice of K, so X is gathered first and the linear computes on the whole of K.
// CHECK-LABEL: func.func @contracts_sharded_axis(
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = fusion.set %{{.*}} : tensor<2xf32, #fusion.parallel<[didx], mesh = [0, 1]>> -> tensor<2xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.linear %[[G]], %{{.*}} : tensor<2xf32, #fusion.parallel<[serial], mesh = [0, 1]>>, tensor<6x2xf32> -> tensor<6xf32, #fusion.parallel<[stream(2)], mesh = [0, 1]>>
func.func @contracts_sharded_axis(%x: tensor<2xf32, #fusion.parallel<[didx], mesh = [0, 1]>>, %w: tensor<6x2xf32>) -> tensor<6xf32, #fusion.parallel<[stream(2)], mesh = [0, 1]>> {
  %y = fusion.linear %x, %w : tensor<2xf32, #fusion.parallel<[didx], mesh = [0, 1]>>, tensor<6x2xf32> -> tensor<6xf32, #fusion.parallel<[stream(2)], mesh = [0, 1]>>
  func.return %y : tensor<6xf32, #fusion.parallel<[stream(2)], mesh = [0, 1]>>
}

// A reduction other than a sum over the didx axis (a max): gathered first, then reduced locally.
// A sum over it is a partial sum, a communication of its own (above).
// CHECK-LABEL: func.func @max_over_sharded_axis(
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = fusion.set %{{.*}} : tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.max %[[G]] dims = [0]
func.func @max_over_sharded_axis(%x: tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>> {
  %m = fusion.max %x dims = [0] : tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  func.return %m : tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
}

// Two ops that need %x gathered the same way share one set (one all-gather, not one per
// consumer); an op that needs it in another layout (streamed) gets its own.
// CHECK-LABEL: func.func @shared_gather(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = fusion.set %[[X]] : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %[[R:[a-z0-9_]+]] = fusion.relu %[[G]]
// CHECK-NEXT:    %[[E:[a-z0-9_]+]] = fusion.exp %[[G]]
// CHECK-NEXT:    %[[S:[a-z0-9_]+]] = fusion.set %[[X]] : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.neg %[[S]]
// CHECK-NOT:     fusion.set
// CHECK:         func.return
func.func @shared_gather(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> (tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>) {
  %r = fusion.relu %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %e = fusion.exp %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %n = fusion.neg %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
  func.return %r, %e, %n : tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
}
