// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// Kernels in a stream loop (nvFuser's DoNotSupportPostOnStream, an error there: a stream axis on
// a codegen'd unit is refused). Here a fusion.segment streamed on an axis runs as one launch per
// iteration on the slices of its operands.

// The fusion of the HIR variant, add then sum over axis 0 of a 4x8x32 input, one unit streamed on
// the result's last axis: iteration i launches the add and the sum on the 4x8 slice i of axis 2
// (a strided view) and writes column i of the result. The add's result stays inside the kernel.

// CHECK-LABEL: func.func @add_sum_unit(
// CHECK-NOT:     %t = hir.allocate
// CHECK:         %s = hir.allocate() : memref<8x32xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c32 step %c1 {
// CHECK:           hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c32 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 2 : memref<4x8x32xf32> -> memref<4x8xf32, strided<[256, 32], offset: ?>>
// CHECK-NEXT:      %s_i = hir.alias_select %s{{\[}}[[I]]] axis 1 : memref<8x32xf32> -> memref<8xf32, strided<[32], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%a = %x_i : memref<4x8xf32, strided<[256, 32], offset: ?>>) outs(%s_i : memref<8xf32, strided<[32], offset: ?>>) {
// CHECK-NEXT:        %t = fusion.add %a, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:        %r = fusion.sum %t dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
// CHECK-NEXT:        hir.yield %r : tensor<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %s : memref<8x32xf32>
func.func @add_sum_unit(%x: tensor<4x8x32xf32>) -> tensor<8x32xf32, #fusion.parallel<[serial, stream]>> {
  %s = fusion.segment ins(%a = %x : tensor<4x8x32xf32>) -> tensor<8x32xf32, #fusion.parallel<[serial, stream]>> {
    %t = fusion.add %a, %a : tensor<4x8x32xf32>, tensor<4x8x32xf32> -> tensor<4x8x32xf32>
    %r = fusion.sum %t dims = [0] : tensor<4x8x32xf32> -> tensor<8x32xf32, #fusion.parallel<[serial, stream]>>
    fusion.yield %r : tensor<8x32xf32, #fusion.parallel<[serial, stream]>>
  }
  func.return %s : tensor<8x32xf32, #fusion.parallel<[serial, stream]>>
}

// -----

// The same ops unsegmented, both streamed on the axis that becomes the result's last: the sum is a
// standalone op, so the add and the sum are two launches in one loop, and the add's result, read
// only in its own iteration, is a ring of one 4x8 slot per stream (min(num_streams, 32) slots)
// instead of a whole 4x8x32 buffer.

// CHECK-LABEL: func.func @add_sum_streamed(
// CHECK:         %s = hir.allocate() : memref<8x32xf32>
// CHECK-NEXT:    %slots = arith.minui %num_streams, %c32 : index
// CHECK-NEXT:    %t = hir.allocate(%slots) : memref<?x4x8xf32>
// CHECK:         hir.synchronize %main
// CHECK:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c32 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 2
// CHECK-NEXT:      %t_i = hir.alias_select %t{{\[}}[[K]]] axis 0 : memref<?x4x8xf32> -> memref<4x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{.*}}%x_i{{.*}}) outs(%t_i : {{.*}}) {
// CHECK-NEXT:        fusion.add
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %s_i = hir.alias_select %s{{\[}}[[I]]] axis 1
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %t_i : {{.*}}) outs(%s_i : {{.*}}) {
// CHECK-NEXT:        fusion.sum
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
func.func @add_sum_streamed(%x: tensor<4x8x32xf32>) -> tensor<8x32xf32, #fusion.parallel<[serial, stream]>> {
  %t = fusion.add %x, %x : tensor<4x8x32xf32>, tensor<4x8x32xf32> -> tensor<4x8x32xf32, #fusion.parallel<[serial, serial, stream]>>
  %s = fusion.sum %t dims = [0] : tensor<4x8x32xf32, #fusion.parallel<[serial, serial, stream]>> -> tensor<8x32xf32, #fusion.parallel<[serial, stream]>>
  func.return %s : tensor<8x32xf32, #fusion.parallel<[serial, stream]>>
}

// -----

// The fusion of the MultiDeviceExecutor variant: an abs (a codegen'd kernel in nvFuser) streamed
// on axis 0 is one launch per row.

// CHECK-LABEL: func.func @abs_rows(
// CHECK:         hir.synchronize %main
// CHECK:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK:           %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %x_i : {{.*}}) outs(%y_i : {{.*}}) {
// CHECK-NEXT:        fusion.abs
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
func.func @abs_rows(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.abs %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
