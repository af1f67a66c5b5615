// RUN: hir-opt %s -p stream-lowering | filecheck %s

// Inside a stream loop over an inner axis, each iteration's slice of a shard is strided; the
// collectives take contiguous buffers, so the send goes from a contiguous copy and the recv (or
// the all-to-all) lands in a contiguous temporary, copied into the slice.

// CHECK-LABEL: func.func @main(
// CHECK:      hir.for
// CHECK:        %[[SLICE:.*]] = hir.alias_select %x[%{{.*}}] axis 2 : memref<1x2x2xf32> -> memref<1x2xf32, strided<[4, 2], offset: ?>>
// CHECK:        scf.if
// CHECK-NEXT:     %[[SENT:.*]] = hir.allocate() : memref<1x2xf32>
// CHECK-NEXT:     hir.launch ins(%{{.*}} = %[[SLICE]] : {{.*}}) outs(%[[SENT]] : memref<1x2xf32>)
// CHECK:          hir.send %[[SENT]] to %{{.*}} mesh = [0, 1] : memref<1x2xf32>
// CHECK:        scf.if
// CHECK-NEXT:     %[[RECEIVED:.*]] = hir.allocate() : memref<1x2xf32>
// CHECK-NEXT:     hir.recv %[[RECEIVED]] from %{{.*}} mesh = [0, 1] : memref<1x2xf32>
// CHECK:          hir.launch ins(%{{.*}} = %[[RECEIVED]] : memref<1x2xf32>) outs(%{{.*}} : memref<1x2xf32, strided<[4, 2], offset: ?>>)

// CHECK-LABEL: func.func @a2a(
// CHECK:      %[[SENT:.*]] = hir.allocate() : memref<1x2xf32>
// CHECK:    %[[RECEIVED:.*]] = hir.allocate() : memref<2x1xf32>
// CHECK:    hir.all_to_all %[[SENT]] into %[[RECEIVED]] split_axis 1 concat_axis 0 mesh = [0, 1] : memref<1x2xf32>, memref<2x1xf32>
// CHECK:    hir.launch ins(%{{.*}} = %[[RECEIVED]] : memref<2x1xf32>) outs(%{{.*}} : memref<2x1xf32, strided<[2, 2], offset: ?>>)

func.func @main(%x: tensor<1x2x2xf32, #fusion.parallel<[didx, serial, stream], mesh = [0]>>) -> tensor<1x2x2xf32, #fusion.parallel<[didx, serial, stream], mesh = [1]>> {
  %y = fusion.set %x : tensor<1x2x2xf32, #fusion.parallel<[didx, serial, stream], mesh = [0]>> -> tensor<1x2x2xf32, #fusion.parallel<[didx, serial, stream], mesh = [1]>>
  func.return %y : tensor<1x2x2xf32, #fusion.parallel<[didx, serial, stream], mesh = [1]>>
}

func.func @a2a(%x: tensor<2x2x2xf32, #fusion.parallel<[didx, serial, stream], mesh = [0, 1]>>) -> tensor<2x2x2xf32, #fusion.parallel<[serial, didx, stream], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<2x2x2xf32, #fusion.parallel<[didx, serial, stream], mesh = [0, 1]>> -> tensor<2x2x2xf32, #fusion.parallel<[serial, didx, stream], mesh = [0, 1]>>
  func.return %y : tensor<2x2x2xf32, #fusion.parallel<[serial, didx, stream], mesh = [0, 1]>>
}
