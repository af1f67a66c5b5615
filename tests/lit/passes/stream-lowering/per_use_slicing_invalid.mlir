// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering | filecheck %s

// In a kernel (segment) the loop slices each region value once per iteration, so every use of a
// value inside it must read it the same way (a bare op reads each operand position on its own:
// per_use_slicing.mlir).

// The segment's input %a is read by two ops.

func.func @in_a_segment(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>> {
  %r = fusion.segment ins(%a = %x, %b = %w : tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>> {
    %e = fusion.exp %a : tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
    // expected-error@+1 {{'fusion.matmul' op reads %a as operand #1 whole, but another use has the loop read it sliced on axis 0: copy it (fusion.set) for one of the uses}}
    %m = fusion.matmul %b, %a : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
    %s = fusion.add %e, %m : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>, tensor<4x4xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
    fusion.yield %s : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  }
  func.return %r : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// With a copy for the right operand, the copy runs whole before the loop and the matmul reads it
// whole in every iteration.

// CHECK: func.func @with_a_copy(
// CHECK: %y = hir.allocate() : memref<4x4xf32>
// CHECK-NEXT: hir.launch ins({{.*}} = %x : memref<4x4xf32>) outs(%y : memref<4x4xf32>)
// CHECK: %x_i = hir.alias_select %x
// CHECK: hir.launch ins({{%[a-z0-9_]+}} = %x_i, {{%[a-z0-9_]+}} = %y : memref<4xf32, strided<[1], offset: ?>>, memref<4x4xf32>)
func.func @with_a_copy(%x: tensor<4x4xf32>) -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.set %x : tensor<4x4xf32> -> tensor<4x4xf32>
  %c = fusion.matmul %x, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  func.return %c : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
}
