// RUN: hir-opt %s --stream-lowering | filecheck %s
// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine}' | filecheck %s
// RUN: hir-opt %s -p 'stream-lowering{backend=ring}' | filecheck %s

// A shard moving from the one-device mesh [0] to the one-device mesh [1] is a send and a receive,
// under scf.if on this device's position in [0, 1]: device 0 sends its input, device 1 receives
// into the output. Nothing writes the output on device 0, which does not hold it (its mesh is
// [1]): the runtime returns None there (docs/multidevice.md, "Outputs on a sub-mesh").

// CHECK-LABEL: func.func @main
// CHECK-SAME:    -> (memref<1x4xf32> {fusion.type = tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [1]>>})
// CHECK-NEXT:    %[[Y:.*]] = hir.allocate() : memref<1x4xf32>
// CHECK-NEXT:    %[[ME:.*]] = hir.device_index mesh = [0, 1] outside 2
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[IS0:.*]] = arith.cmpi eq, %[[ME]], %[[C0]] : index
// CHECK-NEXT:    scf.if %[[IS0]] {
// CHECK-NEXT:      %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[S:.*]] = hir.send %x to %[[C1]] mesh = [0, 1] : memref<1x4xf32>
// CHECK-NEXT:      hir.wait %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[IS1:.*]] = arith.cmpi eq, %[[ME]], %[[ONE]] : index
// CHECK-NEXT:    scf.if %[[IS1]] {
// CHECK-NEXT:      %[[R:.*]] = hir.recv %[[Y]] from %[[C0]] mesh = [0, 1] : memref<1x4xf32>
// CHECK-NEXT:      hir.wait %[[R]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[Y]] : memref<1x4xf32>
// CHECK-NOT:   hir.launch
func.func @main(%x: tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [0]>>) -> tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [1]>> {
  %y = fusion.set %x : tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [0]>> -> tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [1]>>
  func.return %y : tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [1]>>
}
