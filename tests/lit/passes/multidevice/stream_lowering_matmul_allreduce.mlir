// RUN: hir-opt %S/../../../../examples/multidevice/matmul_allreduce.mlir --stream-lowering | filecheck %s

// Row-parallel matmul + all-reduce (examples/multidevice/matmul_allreduce.mlir): K is sharded, the
// matmul computes locally (no set inserted), and the sum over the sharded axis becomes, in the same
// main loop, a local sum into the output chunk C_i and an in-place all-reduce of C_i.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<4x1x32x64xf32> {fusion.type = tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>},
// CHECK-SAME:    %[[B:[a-z0-9_]+]]: memref<1x64x48xf32> {fusion.type = tensor<2x64x48xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>}
// CHECK-DAG:     %[[MAIN:[a-z0-9_]+]] = hir.get_current_stream
// CHECK:         %[[C:[a-z0-9_]+]] = hir.allocate() : memref<4x32x48xf32>
// CHECK-NEXT:    %[[SLOTS:[a-z0-9_]+]] = arith.minui
// CHECK-NEXT:    %[[P:[a-z0-9_]+]] = hir.allocate(%[[SLOTS]]) : memref<?x1x32x48xf32>
// CHECK-NEXT:    hir.for
// CHECK:           hir.synchronize %[[MAIN]]
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for %[[I:[a-z0-9_]+]] =
// CHECK-NEXT:      %[[K:[a-z0-9_]+]] = arith.remui %[[I]]
// CHECK-NEXT:      %[[S:[a-z0-9_]+]] = hir.stream
// CHECK-NEXT:      hir.set_current_stream %[[S]]
// CHECK-NEXT:      %[[AI:[a-z0-9_]+]] = hir.alias_select %[[A]][%[[I]]] axis 0
// CHECK-NEXT:      %[[PI:[a-z0-9_]+]] = hir.alias_select %[[P]][%[[K]]] axis 0 : memref<?x1x32x48xf32> -> memref<1x32x48xf32, strided<[1536, 48, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%[[X:[a-z0-9_]+]] = %[[AI]], %[[Y:[a-z0-9_]+]] = %[[B]] : {{.*}}) outs(%[[PI]] : {{.*}}) {
// CHECK-NEXT:        fusion.matmul %[[X]], %[[Y]] : tensor<1x32x64xf32>, tensor<1x64x48xf32> -> tensor<1x32x48xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[CI:[a-z0-9_]+]] = hir.alias_select %[[C]][%[[I]]] axis 0 : memref<4x32x48xf32> -> memref<32x48xf32, strided<[48, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%[[L:[a-z0-9_]+]] = %[[PI]] : memref<1x32x48xf32, strided<[1536, 48, 1], offset: ?>>) outs(%[[CI]] : {{.*}}) {
// CHECK-NEXT:        fusion.sum %[[L]] dims = [0] : tensor<1x32x48xf32> -> tensor<32x48xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[W:[a-z0-9_]+]] = hir.allreduce sum %[[CI]] into %[[CI]] mesh = [0, 1] : memref<32x48xf32, strided<[48, 1], offset: ?>>, memref<32x48xf32, strided<[48, 1], offset: ?>>
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream %[[MAIN]]
// CHECK-NEXT:      hir.synchronize %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]]
