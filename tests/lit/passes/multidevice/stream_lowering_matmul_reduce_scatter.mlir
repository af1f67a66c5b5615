// RUN: hir-opt %S/../../../../examples/multidevice/matmul_reduce_scatter.mlir --stream-lowering | filecheck %s

// GEMM + reduce-scatter (examples/multidevice/matmul_reduce_scatter.mlir): per chunk, the local
// matmul, then a local sum into a per-iteration partial buffer (2x16x48: the destination's didx
// axis at full extent) and a reduce-scatter of it into this device's part of C_i, in one loop.
// B has no stream axis: its view selects index 0 of its extent-1 batch axis.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<4x1x2x16x64xf32> {fusion.type = tensor<4x2x2x16x64xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>},
// CHECK-SAME:    %[[B:[a-z0-9_]+]]: memref<1x1x1x64x48xf32> {fusion.type = tensor<1x2x1x64x48xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>}
// CHECK-SAME:    -> (memref<4x1x16x48xf32> {fusion.type = tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>})
// CHECK-DAG:     %[[MAIN:[a-z0-9_]+]] = hir.get_current_stream
// CHECK-DAG:     %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK:         %[[C:[a-z0-9_]+]] = hir.allocate() : memref<4x1x16x48xf32>
// CHECK-NEXT:    %[[SLOTS:[a-z0-9_]+]] = arith.minui
// CHECK-NEXT:    %[[P:[a-z0-9_]+]] = hir.allocate(%[[SLOTS]]) : memref<?x1x2x16x48xf32>
// CHECK-NEXT:    hir.for
// CHECK:           hir.synchronize %[[MAIN]]
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for %[[I:[a-z0-9_]+]] =
// CHECK-NEXT:      %[[K:[a-z0-9_]+]] = arith.remui %[[I]]
// CHECK-NEXT:      %[[S:[a-z0-9_]+]] = hir.stream
// CHECK-NEXT:      hir.set_current_stream %[[S]]
// CHECK-NEXT:      %[[AI:[a-z0-9_]+]] = hir.alias_select %[[A]][%[[I]]] axis 0
// CHECK-NEXT:      %[[BI:[a-z0-9_]+]] = hir.alias_select %[[B]][%[[C0]]] axis 0
// CHECK-NEXT:      %[[PI:[a-z0-9_]+]] = hir.alias_select %[[P]][%[[K]]] axis 0
// CHECK-NEXT:      hir.launch ins(%[[X:[a-z0-9_]+]] = %[[AI]], %[[Y:[a-z0-9_]+]] = %[[BI]] : {{.*}}) outs(%[[PI]] : {{.*}}) {
// CHECK-NEXT:        fusion.matmul %[[X]], %[[Y]] : tensor<1x2x16x64xf32>, tensor<1x1x64x48xf32> -> tensor<1x2x16x48xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[CI:[a-z0-9_]+]] = hir.alias_select %[[C]][%[[I]]] axis 0 : memref<4x1x16x48xf32> -> memref<1x16x48xf32, strided<[768, 48, 1], offset: ?>>
// CHECK-NEXT:      %[[PARTIAL:[a-z0-9_]+]] = hir.allocate() : memref<2x16x48xf32>
// CHECK-NEXT:      hir.launch ins(%[[L:[a-z0-9_]+]] = %[[PI]] : {{.*}}) outs(%[[PARTIAL]] : memref<2x16x48xf32>) {
// CHECK-NEXT:        fusion.sum %[[L]] dims = [0] : tensor<1x2x16x48xf32> -> tensor<2x16x48xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[W:[a-z0-9_]+]] = hir.reduce_scatter sum %[[PARTIAL]] into %[[CI]] axis 0 mesh = [0, 1] : memref<2x16x48xf32>, memref<1x16x48xf32, strided<[768, 48, 1], offset: ?>>
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream %[[MAIN]]
// CHECK-NEXT:      hir.synchronize %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]]
