// RUN: hir-opt %s --stream-lowering | filecheck %s

// One stream-parallel copy (nvFuser's SingleSetOp): the program of DESIGN.md section 4. The output
// buffer is allocated before the loops; the fork loop (every worker stream waits for the caller's
// stream %main) stays out of the main loop, which runs iteration i on stream i mod num_streams:
// views of slice i of the input and of the output, a launch that writes into the output view, then
// back to %main, which waits for the worker.

// CHECK-LABEL: func.func @main(%x: memref<4x8xf32> {fusion.type = tensor<4x8xf32>}) -> (memref<4x8xf32> {fusion.type = tensor<4x8xf32, #fusion.parallel<[stream, serial]>>}) {
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %num_streams = hir.num_streams
// CHECK-NEXT:    %main = hir.get_current_stream
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %buf = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %k = arith.remui %i, %num_streams : index
// CHECK-NEXT:      %s = hir.stream %k
// CHECK-NEXT:      hir.set_current_stream %s
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for %i_1 = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %k_1 = arith.remui %i_1, %num_streams : index
// CHECK-NEXT:      %s_1 = hir.stream %k_1
// CHECK-NEXT:      hir.set_current_stream %s_1
// CHECK-NEXT:      %x_i = hir.alias_select %x[%i_1] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %buf_i = hir.alias_select %buf[%i_1] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%x_1 = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%buf_i : memref<8xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        %buf_1 = fusion.set %x_1 : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:        hir.yield %buf_1 : tensor<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize %s_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %buf : memref<4x8xf32>
// CHECK-NEXT:  }
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %buf = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %buf : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
