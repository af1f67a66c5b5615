// RUN: hir-opt %S/../../../../examples/multidevice/ag_linear.mlir --stream-lowering | filecheck %s

// All-gather + linear with bias (examples/multidevice/ag_linear.mlir): only X is sharded, so only
// X is gathered, chunk by chunk in the main loop; W and the bias are passed whole to every launch.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: memref<4x1x32x64xf32> {fusion.type = tensor<4x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>},
// CHECK-SAME:    %[[W:[a-z0-9_]+]]: memref<48x64xf32> {fusion.type = tensor<48x64xf32>},
// CHECK-SAME:    %[[BIAS:[a-z0-9_]+]]: memref<48xf32> {fusion.type = tensor<48xf32>}
// CHECK-DAG:     %[[MAIN:[a-z0-9_]+]] = hir.get_current_stream
// CHECK:         %[[Y:[a-z0-9_]+]] = hir.allocate() : memref<4x2x32x48xf32>
// CHECK-NEXT:    %[[SLOTS:[a-z0-9_]+]] = arith.minui
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = hir.allocate(%[[SLOTS]]) : memref<?x2x32x64xf32>
// CHECK-NEXT:    hir.for
// CHECK:           hir.synchronize %[[MAIN]]
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for %[[I:[a-z0-9_]+]] =
// CHECK-NEXT:      %[[K:[a-z0-9_]+]] = arith.remui %[[I]]
// CHECK-NEXT:      %[[S:[a-z0-9_]+]] = hir.stream
// CHECK-NEXT:      hir.set_current_stream %[[S]]
// CHECK-NEXT:      %[[XI:[a-z0-9_]+]] = hir.alias_select %[[X]][%[[I]]] axis 0 : memref<4x1x32x64xf32> -> memref<1x32x64xf32, strided<[2048, 64, 1], offset: ?>>
// CHECK-NEXT:      %[[GI:[a-z0-9_]+]] = hir.alias_select %[[G]][%[[K]]] axis 0 : memref<?x2x32x64xf32> -> memref<2x32x64xf32, strided<[2048, 64, 1], offset: ?>>
// CHECK-NEXT:      %[[WORK:[a-z0-9_]+]] = hir.allgather %[[XI]] into %[[GI]] axis 0 mesh = [0, 1]
// CHECK-NEXT:      hir.wait %[[WORK]]
// CHECK-NEXT:      %[[YI:[a-z0-9_]+]] = hir.alias_select %[[Y]][%[[I]]] axis 0 : memref<4x2x32x48xf32> -> memref<2x32x48xf32, strided<[1536, 48, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%[[A0:[a-z0-9_]+]] = %[[GI]], %[[A1:[a-z0-9_]+]] = %[[W]], %[[A2:[a-z0-9_]+]] = %[[BIAS]] : {{.*}}) outs(%[[YI]] : {{.*}}) {
// CHECK-NEXT:        fusion.linear %[[A0]], %[[A1]], %[[A2]] : tensor<2x32x64xf32>, tensor<48x64xf32>, tensor<48xf32> -> tensor<2x32x48xf32>
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %[[MAIN]]
// CHECK-NEXT:      hir.synchronize %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[Y]]
