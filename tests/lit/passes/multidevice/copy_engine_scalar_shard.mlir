// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine}' | filecheck %s

// A loop over the shards of a 1-D value: each shard is a 0-d slot, with no axis to cut into
// several pushes, so the automatic chunk count gives one push per shard.

// CHECK:      %x_i = hir.alias_select %x[%c0] axis 0 : memref<1xf32> -> memref<f32, strided<[], offset: ?>>
// CHECK:      scf.if %remote {
// CHECK-NEXT:   hir.set_current_stream %comm
// CHECK-NEXT:   %[[PEER:.*]] = hir.peer_view %x_gathered_symmetric device %to mesh = [0, 1] : memref<2xf32>
// CHECK-NEXT:   %[[SLOT:.*]] = hir.alias_select %[[PEER]][%rank] axis 0 : memref<2xf32> -> memref<f32, strided<[], offset: ?>>
// CHECK-NEXT:   hir.launch ins(%{{.*}} = %x_i : {{.*}}) outs(%[[SLOT]] : {{.*}}) {
// CHECK-NEXT:     fusion.set
// CHECK:        hir.barrier mesh = [0, 1]
// CHECK-NOT:  hir.alias_chunk
// CHECK:      %shard = arith.select %remote, %received, %x_i
// CHECK:      fusion.mul

func.func @main(%x: tensor<2xf32, #fusion.parallel<[didx], mesh = [0, 1]>>, %y: tensor<2xf32, #fusion.parallel<[stream], mesh = [0, 1]>>) -> tensor<2xf32, #fusion.parallel<[stream], mesh = [0, 1]>> {
  %z = fusion.mul %y, %x : tensor<2xf32, #fusion.parallel<[stream], mesh = [0, 1]>>, tensor<2xf32, #fusion.parallel<[didx], mesh = [0, 1]>> -> tensor<2xf32, #fusion.parallel<[stream], mesh = [0, 1]>>
  func.return %z : tensor<2xf32, #fusion.parallel<[stream], mesh = [0, 1]>>
}
