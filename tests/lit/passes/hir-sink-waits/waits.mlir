// RUN: hir-opt %s -p hir-sink-waits --split-input-file | filecheck %s

// The all-gather's wait moves past the launch that reads neither its input nor its output (it runs
// while the collective does) and the allocation after it, and stops before the launch that reads
// the gathered buffer.

// CHECK-LABEL: func.func @independent(
// CHECK:         %[[W:.*]] = hir.allgather %a into %g
// CHECK-NEXT:    %y = hir.allocate()
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %x, %{{.*}} = %w : {{.*}}) outs(%y : memref<8x16xf32>)
// CHECK:         %c = hir.allocate()
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %g,
func.func @independent(%a: memref<1x64x32xf32>, %w: memref<32x16xf32>, %x: memref<8x32xf32>) -> (memref<2x64x16xf32>, memref<8x16xf32>) {
  %g = hir.allocate() : memref<2x64x32xf32>
  %0 = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x64x32xf32>, memref<2x64x32xf32>
  hir.wait %0
  %y = hir.allocate() : memref<8x16xf32>
  hir.launch ins(%x_1 = %x, %w_1 = %w : memref<8x32xf32>, memref<32x16xf32>) outs(%y : memref<8x16xf32>) {
    %y_1 = fusion.matmul %x_1, %w_1 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
    hir.yield %y_1 : tensor<8x16xf32>
  }
  %c = hir.allocate() : memref<2x64x16xf32>
  hir.launch ins(%g_1 = %g, %w_1 = %w : memref<2x64x32xf32>, memref<32x16xf32>) outs(%c : memref<2x64x16xf32>) {
    %c_1 = fusion.matmul %g_1, %w_1 : tensor<2x64x32xf32>, tensor<32x16xf32> -> tensor<2x64x16xf32>
    hir.yield %c_1 : tensor<2x64x16xf32>
  }
  func.return %c, %y : memref<2x64x16xf32>, memref<8x16xf32>
}

// -----

// A launch that also reads the collective's input passes (two reads); one that writes it does
// not: the collective may still be reading it.

// CHECK-LABEL: func.func @writes_the_input(
// CHECK:         %[[W:.*]] = hir.allgather %a into %g
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %a : memref<1x64x32xf32>) outs(%b : memref<1x64x32xf32>)
// CHECK:         hir.wait %[[W]]
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %b : memref<1x64x32xf32>) outs(%a : memref<1x64x32xf32>)
func.func @writes_the_input(%a: memref<1x64x32xf32>, %b: memref<1x64x32xf32>) -> memref<2x64x32xf32> {
  %g = hir.allocate() : memref<2x64x32xf32>
  %0 = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x64x32xf32>, memref<2x64x32xf32>
  hir.wait %0
  hir.launch ins(%a_1 = %a : memref<1x64x32xf32>) outs(%b : memref<1x64x32xf32>) {
    %r = fusion.add %a_1, %a_1 : tensor<1x64x32xf32>, tensor<1x64x32xf32> -> tensor<1x64x32xf32>
    hir.yield %r : tensor<1x64x32xf32>
  }
  hir.launch ins(%b_1 = %b : memref<1x64x32xf32>) outs(%a : memref<1x64x32xf32>) {
    %r = fusion.add %b_1, %b_1 : tensor<1x64x32xf32>, tensor<1x64x32xf32> -> tensor<1x64x32xf32>
    hir.yield %r : tensor<1x64x32xf32>
  }
  func.return %g : memref<2x64x32xf32>
}

// -----

// A stream switch stops the wait (it waits on the stream that is current where it is written),
// and a wait that would pass no launch stays where it is.

// CHECK-LABEL: func.func @stream_switch(
// CHECK:         %[[W:.*]] = hir.allgather %a into %g
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    %s = hir.stream
// CHECK-NEXT:    hir.set_current_stream %s
func.func @stream_switch(%a: memref<1x64x32xf32>, %x: memref<8x32xf32>, %y: memref<8x32xf32>) -> memref<2x64x32xf32> {
  %c1 = arith.constant 1 : index
  %g = hir.allocate() : memref<2x64x32xf32>
  %0 = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x64x32xf32>, memref<2x64x32xf32>
  hir.wait %0
  %s = hir.stream %c1
  hir.set_current_stream %s
  hir.launch ins(%x_1 = %x : memref<8x32xf32>) outs(%y : memref<8x32xf32>) {
    %r = fusion.add %x_1, %x_1 : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
    hir.yield %r : tensor<8x32xf32>
  }
  func.return %g : memref<2x64x32xf32>
}
