// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// Shards moving to another mesh along the same axis (a collective-permute): device k of the
// source mesh sends its shard to device k of the result's mesh, under scf.if on this device's
// position in both meshes, pair after pair in order.

// CHECK-LABEL: func.func @disjoint_meshes
// CHECK:         %[[ME:.*]] = hir.device_index mesh = [0, 1, 2, 3] outside 4
// CHECK:         %[[IS0:.*]] = arith.cmpi eq, %[[ME]], %{{.*}} : index
// CHECK-NEXT:    scf.if %[[IS0]] {
// CHECK:           %[[W0:.*]] = hir.send %x to %{{.*}} mesh = [0, 2] : memref<1x16xf32>
// CHECK-NEXT:      hir.wait %[[W0]]
// CHECK:         scf.if %{{.*}} {
// CHECK-NEXT:      %[[R0:.*]] = hir.recv %y from %{{.*}} mesh = [0, 2] : memref<1x16xf32>
// CHECK-NEXT:      hir.wait %[[R0]]
// CHECK:           hir.send %x to %{{.*}} mesh = [1, 3]
// CHECK:           hir.recv %y from %{{.*}} mesh = [1, 3]
// CHECK:         func.return %y
func.func @disjoint_meshes(%x: tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>> {
  %y = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>
}

// -----

// Overlapping meshes, in a stream loop: device 0 keeps its shard (a local copy), device 1 sends
// to 2, and device 2 receives before it sends to 3.

// CHECK-LABEL: func.func @overlapping_meshes
// CHECK:         hir.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK:           %[[ME:.*]] = hir.device_index mesh = [0, 1, 2, 3] outside 4
// CHECK:           scf.if %{{.*}} {
// CHECK-NEXT:        hir.launch ins(%{{.*}} = %x_i : {{.*}}) outs(%y_i : {{.*}}) {
// CHECK-NEXT:          fusion.set
// CHECK:           hir.send %x_i to %{{.*}} mesh = [1, 2]
// CHECK:           hir.recv %y_i from %{{.*}} mesh = [1, 2]
// CHECK:           hir.send %x_i to %{{.*}} mesh = [2, 3]
// CHECK:           hir.recv %y_i from %{{.*}} mesh = [2, 3]
// CHECK:           hir.set_current_stream %main
func.func @overlapping_meshes(%x: tensor<4x3x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2]>>) -> tensor<4x3x6xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 2, 3]>> {
  %y = fusion.set %x : tensor<4x3x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2]>> -> tensor<4x3x6xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 2, 3]>>
  func.return %y : tensor<4x3x6xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 2, 3]>>
}
