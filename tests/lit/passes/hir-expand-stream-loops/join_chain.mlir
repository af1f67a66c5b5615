// RUN: hir-opt %s -p 'hir-expand-stream-loops{join=chain}' | filecheck %s
// RUN: not hir-opt %s -p 'hir-expand-stream-loops{join=main}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not hir-opt %s -p 'stream-lowering{join=main}' 2>&1 | filecheck %s --check-prefix=BAD

// join=chain: the main loop ends with the work (no switch back to the caller's stream in every
// iteration); after it, pool stream j waits for pool stream j - 1 for j = 1 .. n-1, and the
// caller's stream waits for pool stream n - 1, the end of the chain. A ring slot computed as
// i mod n in the body reuses the worker's stream index.

// CHECK-LABEL: func.func @copy_rows(
// CHECK:         hir.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %k = arith.remui %i, %n : index
// CHECK-NEXT:      %s = hir.stream %k
// CHECK-NEXT:      hir.set_current_stream %s
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for %i_1 = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %k_1 = arith.remui %i_1, %n : index
// CHECK-NEXT:      %s_1 = hir.stream %k_1
// CHECK-NEXT:      hir.set_current_stream %s_1
// CHECK-NEXT:      %row = hir.alias_select %a[%k_1] axis 0
// CHECK-NEXT:      %out = hir.alias_select %b[%i_1] axis 0
// CHECK-NEXT:      hir.launch
// CHECK-NEXT:        fusion.relu
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[ONE:.+]] = arith.constant 1 : index
// CHECK-NEXT:    hir.for %j = %[[ONE]] to %n step %[[ONE]] {
// CHECK-NEXT:      %prev = arith.subi %j, %[[ONE]] : index
// CHECK-NEXT:      %s_j = hir.stream %j
// CHECK-NEXT:      %s_prev = hir.stream %prev
// CHECK-NEXT:      hir.set_current_stream %s_j
// CHECK-NEXT:      hir.synchronize %s_prev
// CHECK-NEXT:    }
// CHECK-NEXT:    %last = arith.subi %n, %[[ONE]] : index
// CHECK-NEXT:    %s_last = hir.stream %last
// CHECK-NEXT:    hir.set_current_stream %main
// CHECK-NEXT:    hir.synchronize %s_last
// CHECK-NEXT:    func.return

// BAD: invalid options for pass '{{.*}}': join must be one of caller, chain, got 'main'
func.func @copy_rows(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = hir.num_streams
  %main = hir.get_current_stream
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %slot = arith.remui %i, %n : index
    %row = hir.alias_select %a[%slot] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out = hir.alias_select %b[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %row : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return
}
