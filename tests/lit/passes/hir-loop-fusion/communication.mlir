// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// All-gather + GEMM written as two stream loops: the first gathers row block i of every device into
// %g[i], the second multiplies %g[i]. The allgather's declared effects (reads its input, writes
// its output) make %g a same-slice dependence: fused.

// CHECK-LABEL: func.func @allgather_then_matmul(
// CHECK:         %c = hir.allocate() : memref<4x16x32xf32>
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           %w = hir.allgather %ai into %gi
// CHECK-NEXT:      hir.wait %w
// CHECK:           fusion.matmul
// CHECK:           hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @allgather_then_matmul(%a: memref<4x8x16xf32>, %b: memref<16x32xf32>) -> memref<4x16x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %g = hir.allocate() : memref<4x16x16xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %ai = hir.alias_select %a[%i] axis 0 : memref<4x8x16xf32> -> memref<8x16xf32, strided<[16, 1], offset: ?>>
    %gi = hir.alias_select %g[%i] axis 0 : memref<4x16x16xf32> -> memref<16x16xf32, strided<[16, 1], offset: ?>>
    %w = hir.allgather %ai into %gi axis 0 mesh = [0, 1] : memref<8x16xf32, strided<[16, 1], offset: ?>>, memref<16x16xf32, strided<[16, 1], offset: ?>>
    hir.wait %w
  }
  %c = hir.allocate() : memref<4x16x32xf32>
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %gj = hir.alias_select %g[%j] axis 0 : memref<4x16x16xf32> -> memref<16x16xf32, strided<[16, 1], offset: ?>>
    %cj = hir.alias_select %c[%j] axis 0 : memref<4x16x32xf32> -> memref<16x32xf32, strided<[32, 1], offset: ?>>
    hir.launch ins(%x = %gj, %y = %b : memref<16x16xf32, strided<[16, 1], offset: ?>>, memref<16x32xf32>) outs(%cj : memref<16x32xf32, strided<[32, 1], offset: ?>>) {
      %z = fusion.matmul %x, %y : tensor<16x16xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
      hir.yield %z : tensor<16x32xf32>
    }
  }
  func.return %c : memref<4x16x32xf32>
}

// The second loop multiplies the next block, %g[(j + 1) mod 4], which a later iteration of the
// first loop gathers: a view at another index than the induction variable. Not fused.

// CHECK-LABEL: func.func @next_block(
// CHECK:         hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           hir.allgather
// CHECK:         hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
// CHECK:           fusion.matmul
func.func @next_block(%a: memref<4x8x16xf32>, %b: memref<16x32xf32>) -> memref<4x16x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %g = hir.allocate() : memref<4x16x16xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %ai = hir.alias_select %a[%i] axis 0 : memref<4x8x16xf32> -> memref<8x16xf32, strided<[16, 1], offset: ?>>
    %gi = hir.alias_select %g[%i] axis 0 : memref<4x16x16xf32> -> memref<16x16xf32, strided<[16, 1], offset: ?>>
    %w = hir.allgather %ai into %gi axis 0 mesh = [0, 1] : memref<8x16xf32, strided<[16, 1], offset: ?>>, memref<16x16xf32, strided<[16, 1], offset: ?>>
    hir.wait %w
  }
  %c = hir.allocate() : memref<4x16x32xf32>
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %j1 = arith.addi %j, %c1 : index
    %next = arith.remui %j1, %c4 : index
    %gj = hir.alias_select %g[%next] axis 0 : memref<4x16x16xf32> -> memref<16x16xf32, strided<[16, 1], offset: ?>>
    %cj = hir.alias_select %c[%j] axis 0 : memref<4x16x32xf32> -> memref<16x32xf32, strided<[32, 1], offset: ?>>
    hir.launch ins(%x = %gj, %y = %b : memref<16x16xf32, strided<[16, 1], offset: ?>>, memref<16x32xf32>) outs(%cj : memref<16x32xf32, strided<[32, 1], offset: ?>>) {
      %z = fusion.matmul %x, %y : tensor<16x16xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
      hir.yield %z : tensor<16x32xf32>
    }
  }
  func.return %c : memref<4x16x32xf32>
}
