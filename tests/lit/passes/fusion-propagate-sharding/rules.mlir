// RUN: hir-opt %s -p fusion-propagate-sharding | filecheck %s
// RUN: hir-opt %s -p 'fusion-propagate-sharding{traversal=forward-backward}' | filecheck %s
// RUN: hir-opt %s -p fusion-propagate-sharding,fusion-propagate-sharding | filecheck %s

// fusion-propagate-sharding with its default traversal (forward, then backward): unannotated
// tensors (no #fusion.parallel) take the didx axis and mesh of their operands, through each op's
// axis map, else of their consumers through its inverse; every other axis is serial. Annotated
// types, function arguments and returned values are left as written; a second run changes nothing.

// Forward through unary and binary elementwise ops: %r and %s take %x's sharding; %b, an
// argument, stays as declared.
// CHECK-LABEL: func.func @elementwise_chain(
// CHECK-NEXT:    %r = fusion.relu %x : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %s = fusion.add %r, %b : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %e = fusion.exp %s : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    func.return
func.func @elementwise_chain(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %b: tensor<2x8xf32>) -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %r = fusion.relu %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  %s = fusion.add %r, %b : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %e = fusion.exp %s : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %e : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// Forward through a permute: the didx axis moves with its data (operand axis 1 -> result axis 0).
// CHECK-LABEL: func.func @permute(
// CHECK-NEXT:    %t = fusion.permute %x perm = [1, 2, 0] : {{.*}} -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %r = fusion.relu %t : {{.*}} -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    func.return
func.func @permute(%x: tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>) -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  %t = fusion.permute %x perm = [1, 2, 0] : tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32>
  %r = fusion.relu %t : tensor<2x8x4xf32> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %r : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}

// Forward through matmul: a sharded M axis of A becomes the result's axis 0, a sharded N axis
// of B the result's axis 1.
// CHECK-LABEL: func.func @matmul_m_and_n(
// CHECK-NEXT:    %m = fusion.matmul %a, %b : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %rm = fusion.relu %m : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %n = fusion.matmul %c, %d : {{.*}} -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %rn = fusion.relu %n : {{.*}} -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    func.return
func.func @matmul_m_and_n(%a: tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %b: tensor<16x8xf32>, %c: tensor<8x16xf32>, %d: tensor<16x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>) -> (tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>) {
  %m = fusion.matmul %a, %b : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<16x8xf32> -> tensor<2x8xf32>
  %rm = fusion.relu %m : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %n = fusion.matmul %c, %d : tensor<8x16xf32>, tensor<16x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> -> tensor<8x2xf32>
  %rn = fusion.relu %n : tensor<8x2xf32> -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %rm, %rn : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}

// Forward through linear: a column-parallel weight (N sharded) shards the result's last axis.
// CHECK-LABEL: func.func @linear_n(
// CHECK-NEXT:    %y = fusion.linear %x, %w : {{.*}} -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %r = fusion.relu %y : {{.*}} -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    func.return
func.func @linear_n(%x: tensor<8x16xf32>, %w: tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
  %y = fusion.linear %x, %w : tensor<8x16xf32>, tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<8x2xf32>
  %r = fusion.relu %y : tensor<8x2xf32> -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %r : tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}

// A didx axis that the op reduces or contracts gives no sharding: the partial sum %s, the max
// %m and the contraction over a sharded K %k get no didx axis. (Backward then makes them
// replicated on their consumers' mesh, which is what the lowering does anyway.)
// CHECK-LABEL: func.func @reductions(
// CHECK-NEXT:    %s = fusion.sum %x dims = [0] : {{.*}} -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %rs = fusion.relu %s : {{.*}} -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %m = fusion.max %x dims = [0] : {{.*}} -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %rm = fusion.relu %m : {{.*}} -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %k = fusion.linear %v, %w : {{.*}} -> tensor<8x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %rk = fusion.relu %k : {{.*}} -> tensor<8x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    func.return
func.func @reductions(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %w: tensor<4x2xf32>, %v: tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>) -> (tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>, tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>, tensor<8x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) {
  %s = fusion.sum %x dims = [0] : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<8xf32>
  %rs = fusion.relu %s : tensor<8xf32> -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  %m = fusion.max %x dims = [0] : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<8xf32>
  %rm = fusion.relu %m : tensor<8xf32> -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  %k = fusion.linear %v, %w : tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, tensor<4x2xf32> -> tensor<8x4xf32>
  %rk = fusion.relu %k : tensor<8x4xf32> -> tensor<8x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %rs, %rm, %rk : tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>, tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>, tensor<8x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}

// Backward: %t is declared sharded on axis 1; through the permute's inverse map %z, then %y, are
// sharded on axis 0. The arguments stay as declared (each device slices its rows locally).
// CHECK-LABEL: func.func @backward(
// CHECK-SAME:    %x: tensor<2x8xf32>, %w: tensor<2x8xf32>) -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
// CHECK-NEXT:    %y = fusion.relu %x : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %z = fusion.mul %y, %w : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %t = fusion.permute %z perm = [1, 0] : {{.*}} -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    func.return
func.func @backward(%x: tensor<2x8xf32>, %w: tensor<2x8xf32>) -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
  %y = fusion.relu %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %z = fusion.mul %y, %w : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %t = fusion.permute %z perm = [1, 0] : tensor<2x8xf32> -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %t : tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}

// Backward through a column-parallel matmul: B feeds the result's didx axis (N) and is
// sharded on its N axis; A feeds no didx axis and is replicated on the mesh.
// CHECK-LABEL: func.func @backward_column_parallel(
// CHECK-NEXT:    %a = fusion.tanh %x : {{.*}} -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %b = fusion.neg %w : {{.*}} -> tensor<16x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %c = fusion.matmul %a, %b : {{.*}} -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    func.return
func.func @backward_column_parallel(%x: tensor<8x16xf32>, %w: tensor<16x2xf32>) -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
  %a = fusion.tanh %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %b = fusion.neg %w : tensor<16x2xf32> -> tensor<16x2xf32>
  %c = fusion.matmul %a, %b : tensor<8x16xf32>, tensor<16x2xf32> -> tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %c : tensor<8x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}

// Annotated types are decisions and are never changed, however their neighbours are sharded
// (%g replicated on the mesh, %s stream-parallel without a mesh); %o is returned: the
// function's results are its interface and stay as declared.
// CHECK-LABEL: func.func @annotated_untouched(
// CHECK-SAME:    -> (tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32>) {
// CHECK-NEXT:    %g = fusion.relu %x : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %s = fusion.exp %g : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[stream, serial]>>{{$}}
// CHECK-NEXT:    %r = fusion.neg %s : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %o = fusion.abs %x : {{.*}} -> tensor<2x8xf32>{{$}}
// CHECK-NEXT:    func.return
func.func @annotated_untouched(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> (tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32>) {
  %g = fusion.relu %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %s = fusion.exp %g : tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.neg %s : tensor<2x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %o = fusion.abs %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  func.return %r, %o : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32>
}

// The mesh travels with the sharding (here [2, 3]); an operand replicated on a mesh makes the
// result replicated on it.
// CHECK-LABEL: func.func @mesh(
// CHECK-NEXT:    %a = fusion.relu %x : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>{{$}}
// CHECK-NEXT:    %b = fusion.relu %y : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>{{$}}
// CHECK-NEXT:    %ra = fusion.neg %a : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>{{$}}
// CHECK-NEXT:    %rb = fusion.neg %b : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>{{$}}
// CHECK-NEXT:    func.return
func.func @mesh(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>, %y: tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>) -> (tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>, tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>) {
  %a = fusion.relu %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>> -> tensor<2x8xf32>
  %b = fusion.relu %y : tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>> -> tensor<2x8xf32>
  %ra = fusion.neg %a : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>
  %rb = fusion.neg %b : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>
  func.return %ra, %rb : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>, tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>
}

// Operands that disagree: the first operand whose didx axis maps to a result axis wins (%a takes
// %y's axis 1); a sharded operand wins over a replicated one (%b). decompose-resharding then
// reshards the other operand; this is not an error.
// CHECK-LABEL: func.func @conflict(
// CHECK-NEXT:    %a = fusion.add %y, %x : {{.*}} -> tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %b = fusion.add %z, %x : {{.*}} -> tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %ra = fusion.neg %a : {{.*}} -> tensor<2x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %rb = fusion.neg %b : {{.*}} -> tensor<2x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    func.return
func.func @conflict(%x: tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %y: tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, %z: tensor<2x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> (tensor<2x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) {
  %a = fusion.add %y, %x : tensor<2x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x2xf32>
  %b = fusion.add %z, %x : tensor<2x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x2xf32>
  %ra = fusion.neg %a : tensor<2x2xf32> -> tensor<2x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %rb = fusion.neg %b : tensor<2x2xf32> -> tensor<2x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %ra, %rb : tensor<2x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<2x2xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}

// Uneven shards (5 rows over 2 devices: 3 and 2): forward, %r and %e take %x's didx axis of extent 5,
// split into the same chunks; backward, %t takes %y's through the add. %wb's rows are a new
// axis of the broadcast, which has one static extent and cannot make chunks of 3 and 2: %wb stays
// replicated (sliced for the add), and so does %w1, on the mesh.
// CHECK-LABEL: func.func @uneven(
// CHECK-NEXT:    %r = fusion.relu %x : {{.*}} -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %e = fusion.exp %r : {{.*}} -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %o = fusion.neg %e
// CHECK-NEXT:    %t = fusion.tanh %b : tensor<5x8xf32> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %w1 = fusion.neg %w : tensor<8xf32> -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %wb = fusion.broadcast %w1 dims = [0] : {{.*}} -> tensor<5x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>{{$}}
func.func @uneven(%x: tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %b: tensor<5x8xf32>, %w: tensor<8xf32>) -> (tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) {
  %r = fusion.relu %x : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x8xf32>
  %e = fusion.exp %r : tensor<5x8xf32> -> tensor<5x8xf32>
  %o = fusion.neg %e : tensor<5x8xf32> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %t = fusion.tanh %b : tensor<5x8xf32> -> tensor<5x8xf32>
  %w1 = fusion.neg %w : tensor<8xf32> -> tensor<8xf32>
  %wb = fusion.broadcast %w1 dims = [0] : tensor<8xf32> -> tensor<5x8xf32>
  %y = fusion.add %t, %wb : tensor<5x8xf32>, tensor<5x8xf32> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %o, %y : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
