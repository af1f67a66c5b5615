// RUN: hir-opt %s --stream-lowering | filecheck %s

// An elementwise kernel streamed: fusion-segment groups exp, neg and tanh (no standalone host op
// among them) into one fusion.segment, which becomes one launch per iteration running the three
// ops on the slice. Only the segment's result gets a buffer; %e and %n stay inside the kernel.

// CHECK-LABEL: func.func @kernel(
// CHECK-NOT:     {{%e|%n}} = hir.allocate
// CHECK:         %t = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c4 step %c1 {
// CHECK-NEXT:      arith.remui
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %t_i = hir.alias_select %t{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[X:%[a-z0-9_]+]] = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%t_i : memref<8xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        %e = fusion.exp [[X]] : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:        %n = fusion.neg %e : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:        [[T:%[a-z0-9_]+]] = fusion.tanh %n : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:        hir.yield [[T]] : tensor<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %t : memref<4x8xf32>
func.func @kernel(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %n = fusion.neg %e : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %t = fusion.tanh %n : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %t : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// A hand-written segment streamed on axis 1, with two results: one launch writes two output
// views; inner values keep their names, and the segment's region arguments become the launch's.

// CHECK-LABEL: func.func @segment(
// CHECK:         %r = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %n = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c8 step %c1 {
// CHECK-NEXT:      arith.remui
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 1 : memref<4x8xf32> -> memref<4xf32, strided<[8], offset: ?>>
// CHECK-NEXT:      %r_i = hir.alias_select %r{{\[}}[[I]]] axis 1 : memref<4x8xf32> -> memref<4xf32, strided<[8], offset: ?>>
// CHECK-NEXT:      %n_i = hir.alias_select %n{{\[}}[[I]]] axis 1 : memref<4x8xf32> -> memref<4xf32, strided<[8], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%a = %x_i : memref<4xf32, strided<[8], offset: ?>>) outs(%r_i, %n_i : memref<4xf32, strided<[8], offset: ?>>, memref<4xf32, strided<[8], offset: ?>>) {
// CHECK-NEXT:        %b = fusion.abs %a : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.relu %b : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:        [[N:%[a-z0-9_]+]] = fusion.neg [[R]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:        hir.yield [[R]], [[N]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %n : memref<4x8xf32>, memref<4x8xf32>
func.func @segment(%x: tensor<4x8xf32>) -> (tensor<4x8xf32, #fusion.parallel<[serial, stream]>>, tensor<4x8xf32, #fusion.parallel<[serial, stream]>>) {
  %r, %n = fusion.segment ins(%a = %x : tensor<4x8xf32>) -> (tensor<4x8xf32, #fusion.parallel<[serial, stream]>>, tensor<4x8xf32, #fusion.parallel<[serial, stream]>>) {
    %b = fusion.abs %a : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
    %r = fusion.relu %b : tensor<4x8xf32, #fusion.parallel<[serial, stream]>> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
    %n = fusion.neg %r : tensor<4x8xf32, #fusion.parallel<[serial, stream]>> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
    fusion.yield %r, %n : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>, tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  }
  func.return %r, %n : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>, tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}
