// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine}' | filecheck %s
// RUN: hir-opt %s -p 'stream-lowering{backend=ring}' | filecheck %s --check-prefix=RING

// A loop over the devices' shards whose slot of the gathered buffer is not laid out as the local
// shard (the gathered axis is the last one: slot d of [1, 1, 2] is a strided view, the local
// shard a contiguous [1, 1]): the copy-engine and ring lowerings give the slots a buffer of their
// own, [D, *shard], so that a slot and the local shard are the same type.

// CHECK:     %[[SLOTS:.*]] = hir.allocate() symmetric : memref<2x1x1xbf16>
// CHECK:     %[[RECEIVED:.*]] = hir.alias_select %[[SLOTS]][%{{.*}}] axis 0 : memref<2x1x1xbf16> -> memref<1x1xbf16, strided<[1, 1], offset: ?>>
// CHECK:     arith.select %{{.*}}, %[[RECEIVED]], %{{.*}} : memref<1x1xbf16, strided<[1, 1], offset: ?>>

// RING:      %[[SLOTS:.*]] = hir.allocate() : memref<2x1x1xbf16>
// RING:      hir.collective_permute
// RING:      arith.select %{{.*}}, %{{.*}}, %{{.*}} : memref<1x1xbf16, strided<[1, 1], offset: ?>>

func.func @main(%x: tensor<1x1x2xbf16, #fusion.parallel<[serial, serial, didx], mesh = [0, 1]>>) -> tensor<1x1x2xbf16, #fusion.parallel<[serial, serial, stream], mesh = [0, 1]>> {
  %y = fusion.neg %x : tensor<1x1x2xbf16, #fusion.parallel<[serial, serial, didx], mesh = [0, 1]>> -> tensor<1x1x2xbf16, #fusion.parallel<[serial, serial, stream], mesh = [0, 1]>>
  func.return %y : tensor<1x1x2xbf16, #fusion.parallel<[serial, serial, stream], mesh = [0, 1]>>
}
