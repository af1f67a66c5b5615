// RUN: hir-opt %S/../../../../examples/multidevice/matmul_reduce_scatter.mlir --stream-lowering | filecheck %s

// GEMM + reduce-scatter (examples/multidevice/matmul_reduce_scatter.mlir): per chunk, the local
// matmul into P_i, then a reduce-scatter of this device's partial (P_i without its extent-1 didx
// axis: a 2x16x48 view, no copy) into this device's part of C_i, in one loop. B has no stream
// axis: its view selects index 0 of its extent-1 batch axis.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<4x1x2x16x64xf32> {fusion.type = tensor<4x2x2x16x64xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>},
// CHECK-SAME:    %[[B:[a-z0-9_]+]]: memref<1x1x1x64x48xf32> {fusion.type = tensor<1x2x1x64x48xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>}
// CHECK-SAME:    -> (memref<4x1x16x48xf32> {fusion.type = tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>})
// CHECK-DAG:     %[[MAIN:[a-z0-9_]+]] = hir.get_current_stream
// CHECK-DAG:     %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK:         %[[P:[a-z0-9_]+]] = hir.allocate() : memref<4x1x2x16x48xf32>
// CHECK-NEXT:    %[[C:[a-z0-9_]+]] = hir.allocate() : memref<4x1x16x48xf32>
// CHECK-NEXT:    hir.for
// CHECK:           hir.synchronize %[[MAIN]]
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for %[[I:[a-z0-9_]+]] =
// CHECK-NEXT:      arith.remui %[[I]]
// CHECK-NEXT:      %[[S:[a-z0-9_]+]] = hir.stream
// CHECK-NEXT:      hir.set_current_stream %[[S]]
// CHECK-NEXT:      %[[AI:[a-z0-9_]+]] = hir.alias_select %[[A]][%[[I]]] axis 0
// CHECK-NEXT:      %[[BI:[a-z0-9_]+]] = hir.alias_select %[[B]][%[[C0]]] axis 0
// CHECK-NEXT:      %[[PI:[a-z0-9_]+]] = hir.alias_select %[[P]][%[[I]]] axis 0
// CHECK-NEXT:      hir.launch ins(%[[X:[a-z0-9_]+]] = %[[AI]], %[[Y:[a-z0-9_]+]] = %[[BI]] : {{.*}}) outs(%[[PI]] : {{.*}}) {
// CHECK-NEXT:        fusion.matmul %[[X]], %[[Y]] : tensor<1x2x16x64xf32>, tensor<1x1x64x48xf32> -> tensor<1x2x16x48xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[CI:[a-z0-9_]+]] = hir.alias_select %[[C]][%[[I]]] axis 0 : memref<4x1x16x48xf32> -> memref<1x16x48xf32, strided<[768, 48, 1], offset: ?>>
// CHECK-NEXT:      %[[PARTIAL:[a-z0-9_]+]] = hir.alias_select %[[PI]][%[[C0]]] axis 0 : memref<1x2x16x48xf32, strided<[1536, 768, 48, 1], offset: ?>> -> memref<2x16x48xf32, strided<[768, 48, 1], offset: ?>>
// CHECK-NEXT:      %[[W:[a-z0-9_]+]] = hir.reduce_scatter sum %[[PARTIAL]] into %[[CI]] axis 0 mesh = [0, 1] : memref<2x16x48xf32, strided<[768, 48, 1], offset: ?>>, memref<1x16x48xf32, strided<[768, 48, 1], offset: ?>>
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream %[[MAIN]]
// CHECK-NEXT:      hir.synchronize %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]]
