// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// Stream-parallel inputs (nvFuser's InputsAreNotStreamParallelized, skipped there since inputs may
// be stream parallelized). An input's encoding says how the caller's tensor is pipelined; the
// lowering slices it like any operand: the loop follows its consumer's result, and the input
// arrives whole (a memref of its full shape).

// A copy from a stream input to a stream output on the same axis: one pair of loops, the input
// sliced row by row.

// CHECK-LABEL: func.func @stream_input(%x: memref<4x8xf32> {fusion.type = tensor<4x8xf32, #fusion.parallel<[stream, serial]>>})
// CHECK:         %y = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.for [[F:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK:           hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%y_i : memref<8xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        fusion.set
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y : memref<4x8xf32>
func.func @stream_input(%x: tensor<4x8xf32, #fusion.parallel<[stream, serial]>>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// Only the input is stream-parallel (the fusion of nvFuser's MultiDeviceExecutor variant): no op
// result has a stream axis, so there is no loop and no stream switch; the copy runs whole.

// CHECK-LABEL: func.func @only_input(
// CHECK-NOT:     hir.for
// CHECK-NOT:     hir.set_current_stream
// CHECK:         %y = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.launch ins({{%[a-z0-9_]+}} = %x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
// CHECK-NEXT:      fusion.set
// CHECK-NEXT:      hir.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y : memref<4x8xf32>
func.func @only_input(%x: tensor<4x8xf32, #fusion.parallel<[stream, serial]>>) -> tensor<4x8xf32> {
  %y = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// The input streamed on axis 1, the result on axis 0: the loop follows the result, so the input
// is sliced on the axis the set maps result axis 0 to (axis 0), not on its own stream axis.

// CHECK-LABEL: func.func @other_axis(
// CHECK:         hir.synchronize %main
// CHECK:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK:           %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
func.func @other_axis(%x: tensor<4x8xf32, #fusion.parallel<[serial, stream]>>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[serial, stream]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// stream(2) chunks on the input and the result: one iteration per chunk of 2 rows.

// CHECK-LABEL: func.func @chunks(
// CHECK:         hir.synchronize %main
// CHECK:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c2 step %c1 {
// CHECK:           %x_i = hir.alias_chunk %x{{\[}}[[I]]] axis 0 chunks 2 : memref<4x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_chunk %y{{\[}}[[I]]] axis 0 chunks 2 : memref<4x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:      hir.launch
// CHECK-NEXT:        fusion.neg
func.func @chunks(%x: tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>) -> tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>> {
  %y = fusion.neg %x : tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
}
