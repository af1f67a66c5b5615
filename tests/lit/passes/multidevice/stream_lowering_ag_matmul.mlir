// RUN: hir-opt %S/../../../../examples/ag_matmul.mlir --stream-lowering | filecheck %s
// RUN: hir-opt %S/../../../../examples/ag_matmul.mlir -p stream-lowering | hir-opt | filecheck %s

// All-gather + GEMM (examples/ag_matmul.mlir): A[S=4, didx(D=2), M/(S*D)=64, K] x B -> C[stream(S), ...].
// fusion-decompose-resharding gathers A into a stream-parallel buffer G, so the all-gather of
// chunk i lands in the same main loop as the GEMM of chunk i (DESIGN.md section 4, the seed's
// body shape): set stream, select A_i, select G_i, allgather, wait, select C_i,
// launch matmul(G_i, B) -> C_i, back to main, synchronize. The fork loop stays outside. G lives
// inside an iteration, so hir-ring-intermediates allocates it as a ring of min(num_streams, 4)
// gathered chunks, chunk i in slot i mod num_streams (the worker's stream index).

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<4x1x64x256xf32> {fusion.type = tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>},
// CHECK-SAME:    %[[B:[a-z0-9_]+]]: memref<256x128xf32> {fusion.type = tensor<256x128xf32>}
// CHECK-SAME:    -> (memref<4x2x64x128xf32> {fusion.type = tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>})
// CHECK-DAG:     %[[C4:[a-z0-9_]+]] = arith.constant 4 : index
// CHECK-DAG:     %[[NS:[a-z0-9_]+]] = hir.num_streams
// CHECK-DAG:     %[[MAIN:[a-z0-9_]+]] = hir.get_current_stream
// CHECK-DAG:     %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK:         %[[C:[a-z0-9_]+]] = hir.allocate() : memref<4x2x64x128xf32>
// CHECK-NEXT:    %[[SLOTS:[a-z0-9_]+]] = arith.minui %[[NS]], %[[C4]] : index
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = hir.allocate(%[[SLOTS]]) : memref<?x2x64x256xf32>

// The fork loop: every worker stream waits for the caller's stream, nothing else.
// CHECK-NEXT:    hir.for %[[F:[a-z0-9_]+]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:      %[[FK:[a-z0-9_]+]] = arith.remui %[[F]], %[[NS]] : index
// CHECK-NEXT:      %[[FS:[a-z0-9_]+]] = hir.stream %[[FK]]
// CHECK-NEXT:      hir.set_current_stream %[[FS]]
// CHECK-NEXT:      hir.synchronize %[[MAIN]]
// CHECK-NEXT:    }

// The main loop.
// CHECK-NEXT:    hir.for %[[I:[a-z0-9_]+]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:      %[[K:[a-z0-9_]+]] = arith.remui %[[I]], %[[NS]] : index
// CHECK-NEXT:      %[[S:[a-z0-9_]+]] = hir.stream %[[K]]
// CHECK-NEXT:      hir.set_current_stream %[[S]]
// CHECK-NEXT:      %[[AI:[a-z0-9_]+]] = hir.alias_select %[[A]][%[[I]]] axis 0 : memref<4x1x64x256xf32> -> memref<1x64x256xf32, strided<[16384, 256, 1], offset: ?>>
// CHECK-NEXT:      %[[GI:[a-z0-9_]+]] = hir.alias_select %[[G]][%[[K]]] axis 0 : memref<?x2x64x256xf32> -> memref<2x64x256xf32, strided<[16384, 256, 1], offset: ?>>
// CHECK-NEXT:      %[[W:[a-z0-9_]+]] = hir.allgather %[[AI]] into %[[GI]] axis 0 mesh = [0, 1] : memref<1x64x256xf32, strided<[16384, 256, 1], offset: ?>>, memref<2x64x256xf32, strided<[16384, 256, 1], offset: ?>>
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      %[[CI:[a-z0-9_]+]] = hir.alias_select %[[C]][%[[I]]] axis 0 : memref<4x2x64x128xf32> -> memref<2x64x128xf32, strided<[8192, 128, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%[[X:[a-z0-9_]+]] = %[[GI]], %[[Y:[a-z0-9_]+]] = %[[B]] : memref<2x64x256xf32, strided<[16384, 256, 1], offset: ?>>, memref<256x128xf32>) outs(%[[CI]] : memref<2x64x128xf32, strided<[8192, 128, 1], offset: ?>>) {
// CHECK-NEXT:        %[[Z:[a-z0-9_]+]] = fusion.matmul %[[X]], %[[Y]] : tensor<2x64x256xf32>, tensor<256x128xf32> -> tensor<2x64x128xf32>
// CHECK-NEXT:        hir.yield %[[Z]] : tensor<2x64x128xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %[[MAIN]]
// CHECK-NEXT:      hir.synchronize %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]] : memref<4x2x64x128xf32>
// CHECK-NEXT:  }
