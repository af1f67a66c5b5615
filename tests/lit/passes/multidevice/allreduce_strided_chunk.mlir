// RUN: hir-opt %s --stream-lowering | filecheck %s

// A sum over the didx axis into chunk i of an output whose stream axis is inner (nvFuser's
// AllreduceNoncontig): the chunk is a strided view, and the collective reduces contiguous
// buffers, so the local sum goes into a contiguous `%partial`, which is all-reduced in place and
// copied into the chunk (refused before: "all-reduce needs contiguous buffers";
// passes/lower_communication.py).
// CHECK-LABEL: func.func @allreduce_strided_chunk
// CHECK:         hir.for %i_1 = %c0 to %c4 step %c1 {
// CHECK:           %y_i = hir.alias_select %y[%i_1] axis 1 : memref<8x4x16xf32> -> memref<8x16xf32, strided<[64, 1], offset: ?>>
// CHECK-NEXT:      %partial = hir.allocate() : memref<8x16xf32>
// CHECK-NEXT:      hir.launch ins(%x_i_1 = %x_i : memref<1x8x16xf32, strided<[512, 64, 1], offset: ?>>) outs(%partial : memref<8x16xf32>) {
// CHECK-NEXT:        %0 = fusion.sum %x_i_1 dims = [0] : tensor<1x8x16xf32> -> tensor<8x16xf32>
// CHECK:           %0 = hir.allreduce sum %partial into %partial mesh = [0, 1] : memref<8x16xf32>, memref<8x16xf32>
// CHECK-NEXT:      hir.wait %0
// CHECK-NEXT:      hir.launch ins(%partial_1 = %partial : memref<8x16xf32>) outs(%y_i : memref<8x16xf32, strided<[64, 1], offset: ?>>) {
// CHECK-NEXT:        %1 = fusion.set %partial_1 : tensor<8x16xf32> -> tensor<8x16xf32>
func.func @allreduce_strided_chunk(%x: tensor<2x8x4x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>) -> tensor<8x4x16xf32, #fusion.parallel<[serial, stream, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<2x8x4x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<8x4x16xf32, #fusion.parallel<[serial, stream, serial], mesh = [0, 1]>>
  func.return %y : tensor<8x4x16xf32, #fusion.parallel<[serial, stream, serial], mesh = [0, 1]>>
}
