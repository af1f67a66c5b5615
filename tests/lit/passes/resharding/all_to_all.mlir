// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// didx axis A -> didx axis B on one mesh (an all-to-all): hir.all_to_all splits the shard along
// B (whole locally) into one chunk per device and concatenates what it receives along A. Both
// axes are outermost in memory here (only extent-1 axes before them): no temporaries.

// CHECK-LABEL: func.func @all_to_all
// CHECK:         %y = hir.allocate() : memref<2x1x16xf32>
// CHECK-NEXT:    %[[W:.*]] = hir.all_to_all %x into %y split_axis 1 concat_axis 0 mesh = [0, 1] : memref<1x2x16xf32>, memref<2x1x16xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return %y
func.func @all_to_all(%x: tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}


// -----

// In a stream loop (axis 0 is the stream axis, so the chunk's axes 0 -> 1), on the views of
// chunk i directly (both contiguous).
// CHECK-LABEL: func.func @all_to_all_in_loop
// CHECK:           %x_i = hir.alias_select %x[%{{.*}}] axis 0
// CHECK:           %y_i = hir.alias_select %y[%{{.*}}] axis 0
// CHECK-NEXT:      %[[W:.*]] = hir.all_to_all %x_i into %y_i split_axis 1 concat_axis 0 mesh = [0, 1]
// CHECK-NEXT:      hir.wait %[[W]]
func.func @all_to_all_in_loop(%x: tensor<4x2x2x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>) -> tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<4x2x2x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> -> tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>>
}


// -----

// A max over the didx axis whose result is sharded on another axis: fusion-decompose-resharding's
// set before the max is an all-to-all.
// CHECK-LABEL: func.func @max_into_other_didx
// CHECK:         hir.all_to_all %x into %x_gathered split_axis 1 concat_axis 0 mesh = [0, 1] : memref<1x2x8xf32>, memref<2x1x8xf32>
// CHECK:           fusion.max %{{.*}} dims = [0] : tensor<2x1x8xf32> -> tensor<1x8xf32>
func.func @max_into_other_didx(%x: tensor<2x2x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %m = fusion.max %x dims = [0] : tensor<2x2x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %m : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// -----

// Axes behind a longer one (4 rows first): the shard goes through a %sent temporary with the axes
// in the order [a, b, the others], the collective fills a %received one in that order, and a
// permute-copy puts it into place.
// CHECK-LABEL: func.func @inner_axes
// CHECK:         %sent = hir.allocate() : memref<1x2x4xf32>
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %x : memref<4x1x2xf32>) outs(%sent : memref<1x2x4xf32>) {
// CHECK-NEXT:      fusion.permute %{{.*}} perm = [1, 2, 0] : tensor<4x1x2xf32> -> tensor<1x2x4xf32>
// CHECK:         %received = hir.allocate() : memref<2x1x4xf32>
// CHECK-NEXT:    %[[W:.*]] = hir.all_to_all %sent into %received split_axis 1 concat_axis 0 mesh = [0, 1] : memref<1x2x4xf32>, memref<2x1x4xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %received : memref<2x1x4xf32>) outs(%y : memref<4x2x1xf32>) {
// CHECK-NEXT:      fusion.permute %{{.*}} perm = [2, 0, 1] : tensor<2x1x4xf32> -> tensor<4x2x1xf32>
func.func @inner_axes(%x: tensor<4x2x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>) -> tensor<4x2x2xf32, #fusion.parallel<[serial, serial, didx], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<4x2x2xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<4x2x2xf32, #fusion.parallel<[serial, serial, didx], mesh = [0, 1]>>
  func.return %y : tensor<4x2x2xf32, #fusion.parallel<[serial, serial, didx], mesh = [0, 1]>>
}
