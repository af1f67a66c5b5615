// RUN: hir-opt %s -p hir-lower-communication | filecheck %s

// hir-lower-communication alone: a hand-written all-gather into a strided view goes through a
// contiguous temporary.

// CHECK-LABEL: func.func @strided_target
// CHECK:         %gathered = hir.allocate() : memref<2x8xf32>
// CHECK-NEXT:    %[[W:.*]] = hir.allgather %a into %gathered axis 0 mesh = [0, 1] : memref<1x8xf32>, memref<2x8xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %gathered : memref<2x8xf32>) outs(%gi : memref<2x8xf32, strided<[32, 1], offset: ?>>)

func.func @strided_target(%a: memref<1x8xf32>, %g: memref<2x4x8xf32>, %i: index) {
  %gi = hir.alias_select %g[%i] axis 1 : memref<2x4x8xf32> -> memref<2x8xf32, strided<[32, 1], offset: ?>>
  hir.launch ins(%x = %a : memref<1x8xf32> as tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) outs(%gi : memref<2x8xf32, strided<[32, 1], offset: ?>>) {
    %y = fusion.set %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
    hir.yield %y : tensor<2x8xf32>
  }
  func.return
}
