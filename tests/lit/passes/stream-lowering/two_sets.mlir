// RUN: hir-opt %s --stream-lowering | filecheck %s

// Two consecutive sets whose stream axes map (nvFuser's TwoSetOps): two allocations before the
// loops, ONE fork loop and ONE main loop running both launches on the same stream, the second
// reading the slice of %y the first just wrote. %y lives inside an iteration: hir-ring-intermediates
// makes it a ring of min(num_streams, 4) rows, indexed by the worker's stream index.

// CHECK-LABEL: func.func @two_sets(
// CHECK-NOT:     hir.for
// CHECK:         %z = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %slots = arith.minui %num_streams, %c4 : index
// CHECK-NEXT:    %y = hir.allocate(%slots) : memref<?x8xf32>
// CHECK-NEXT:    hir.for [[F:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[FK:%[a-z0-9_]+]] = arith.remui [[F]], %num_streams : index
// CHECK-NEXT:      [[FS:%[a-z0-9_]+]] = hir.stream [[FK]]
// CHECK-NEXT:      hir.set_current_stream [[FS]]
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[K]]] axis 0 : memref<?x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%y_i : memref<8xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.set [[A]] : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %z_i = hir.alias_select %z{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A2:%[a-z0-9_]+]] = %y_i : memref<8xf32, strided<[1], offset: ?>>) outs(%z_i : memref<8xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        [[R2:%[a-z0-9_]+]] = fusion.set [[A2]] : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:        hir.yield [[R2]] : tensor<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %z : memref<4x8xf32>
func.func @two_sets(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %z = fusion.set %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %z : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
