// --print-op-generic prints every op of both dialects in the generic form, properties in <{..}>.
// RUN: hir-opt %s --print-op-generic | filecheck %s

// CHECK: %b = "hir.allocate"() <{symmetric}> : () -> memref<2x8xf32>
// CHECK: %v = "hir.alias_select"(%b, %i) <{axis = 0 : i64}> : (memref<2x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
// CHECK: "hir.launch"(%v, %v) <{operandSegmentSizes = array<i32: 1, 1>}> ({
// CHECK-NEXT: ^bb0(%x: tensor<8xf32>):
// CHECK-NEXT: %s = "fusion.sum"(%x) <{dims = array<i64: 0>}> : (tensor<8xf32>) -> tensor<f32>
// CHECK-NEXT: %y = "fusion.broadcast"(%s) <{dims = array<i64: 0>}> : (tensor<f32>) -> tensor<8xf32>
// CHECK-NEXT: "hir.yield"(%y) : (tensor<8xf32>) -> ()
// CHECK: %w = "hir.allreduce"(%b, %b) <{kind = "sum", mesh = array<i64: 0, 1>}> : (memref<2x8xf32>, memref<2x8xf32>) -> !hir.work
func.func @f(%i: index) {
  %b = hir.allocate() symmetric : memref<2x8xf32>
  %v = hir.alias_select %b[%i] axis 0 : memref<2x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  hir.launch ins(%x = %v : memref<8xf32, strided<[1], offset: ?>>) outs(%v : memref<8xf32, strided<[1], offset: ?>>) {
    %s = fusion.sum %x dims = [0] : tensor<8xf32> -> tensor<f32>
    %y = fusion.broadcast %s dims = [0] : tensor<f32> -> tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  }
  %w = hir.allreduce sum %b into %b mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf32>
  hir.wait %w
  func.return
}
