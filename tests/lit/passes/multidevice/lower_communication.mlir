// RUN: hir-opt %s -p hir-lower-communication | filecheck %s

// hir-lower-communication alone, on hand-written resharding launches (a hir.launch whose region
// sees global, #fusion.parallel-encoded tensors): each becomes a collective on the current stream
// followed by hir.wait, in the launch's place. A launch on plain tensors is left alone.

// set: didx axis 0 -> replicated on the same mesh = all-gather along axis 0.
// CHECK-LABEL: func.func @allgather(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<1x8xf32>, %[[G:[a-z0-9_]+]]: memref<2x8xf32>
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = hir.allgather %[[A]] into %[[G]] axis 0 mesh = [0, 1] : memref<1x8xf32>, memref<2x8xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return
func.func @allgather(%a: memref<1x8xf32>, %g: memref<2x8xf32>) {
  hir.launch ins(%x = %a : memref<1x8xf32> as tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) outs(%g : memref<2x8xf32>) {
    %y = fusion.set %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
    hir.yield %y : tensor<2x8xf32>
  }
  func.return
}

// The gathered axis may come after axes of extent 1 (a chunk of one row block); the mesh is the source's.
// CHECK-LABEL: func.func @allgather_inner_extent_one(
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = hir.allgather %{{.*}} into %{{.*}} axis 1 mesh = [0, 1, 2, 3] : memref<1x1x8xf32>, memref<1x4x8xf32>
// CHECK-NEXT:    hir.wait %[[W]]
func.func @allgather_inner_extent_one(%a: memref<1x1x8xf32>, %g: memref<1x4x8xf32>) {
  hir.launch ins(%x = %a : memref<1x1x8xf32> as tensor<1x4x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2, 3]>>) outs(%g : memref<1x4x8xf32>) {
    %y = fusion.set %x : tensor<1x4x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<1x4x8xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1, 2, 3]>>
    hir.yield %y : tensor<1x4x8xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1, 2, 3]>>
  }
  func.return
}

// Inside a stream loop the launch works on views: the all-gather of chunk i stays where the launch
// was, after the stream switch and before the launch that reads G_i.
// CHECK-LABEL: func.func @allgather_in_loop(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<4x1x8xf32>, %[[G:[a-z0-9_]+]]: memref<4x2x8xf32>, %[[C:[a-z0-9_]+]]: memref<4x2x8xf32>
// CHECK:         hir.for %[[I:[a-z0-9_]+]] =
// CHECK-NEXT:      %[[K:[a-z0-9_]+]] = arith.remui %[[I]]
// CHECK-NEXT:      %[[S:[a-z0-9_]+]] = hir.stream %[[K]]
// CHECK-NEXT:      hir.set_current_stream %[[S]]
// CHECK-NEXT:      %[[AI:[a-z0-9_]+]] = hir.alias_select %[[A]][%[[I]]] axis 0
// CHECK-NEXT:      %[[GI:[a-z0-9_]+]] = hir.alias_select %[[G]][%[[I]]] axis 0
// CHECK-NEXT:      %[[W:[a-z0-9_]+]] = hir.allgather %[[AI]] into %[[GI]] axis 0 mesh = [0, 1] : memref<1x8xf32, strided<[8, 1], offset: ?>>, memref<2x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      %[[CI:[a-z0-9_]+]] = hir.alias_select %[[C]][%[[I]]] axis 0
// CHECK-NEXT:      hir.launch ins(%[[X:[a-z0-9_]+]] = %[[GI]] : {{.*}}) outs(%[[CI]] : {{.*}}) {
// CHECK-NEXT:        fusion.relu %[[X]] : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK:           hir.set_current_stream %[[MAIN:[a-z0-9_]+]]
// CHECK-NEXT:      hir.synchronize %[[S]]
// CHECK-NEXT:    }
func.func @allgather_in_loop(%a: memref<4x1x8xf32>, %g: memref<4x2x8xf32>, %c: memref<4x2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  hir.for %i = %c0 to %c4 step %c1 {
    %k = arith.remui %i, %n : index
    %s = hir.stream %k
    hir.set_current_stream %s
    %ai = hir.alias_select %a[%i] axis 0 : memref<4x1x8xf32> -> memref<1x8xf32, strided<[8, 1], offset: ?>>
    %gi = hir.alias_select %g[%i] axis 0 : memref<4x2x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
    hir.launch ins(%x = %ai : memref<1x8xf32, strided<[8, 1], offset: ?>> as tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) outs(%gi : memref<2x8xf32, strided<[8, 1], offset: ?>>) {
      %y = fusion.set %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
      hir.yield %y : tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
    }
    %ci = hir.alias_select %c[%i] axis 0 : memref<4x2x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
    hir.launch ins(%x = %gi : memref<2x8xf32, strided<[8, 1], offset: ?>>) outs(%ci : memref<2x8xf32, strided<[8, 1], offset: ?>>) {
      %y = fusion.relu %x : tensor<2x8xf32> -> tensor<2x8xf32>
      hir.yield %y : tensor<2x8xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s
  }
  func.return
}

// sum over the didx axis -> replicated = a local partial sum into the output, then an in-place
// all-reduce of it.
// CHECK-LABEL: func.func @allreduce(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<1x4x8xf32>, %[[R:[a-z0-9_]+]]: memref<4x8xf32>
// CHECK-NEXT:    hir.launch ins(%[[X:[a-z0-9_]+]] = %[[A]] : memref<1x4x8xf32>) outs(%[[R]] : memref<4x8xf32>) {
// CHECK-NEXT:      %[[P:[a-z0-9_]+]] = fusion.sum %[[X]] dims = [0] : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      hir.yield %[[P]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = hir.allreduce sum %[[R]] into %[[R]] mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return
func.func @allreduce(%a: memref<1x4x8xf32>, %r: memref<4x8xf32>) {
  hir.launch ins(%x = %a : memref<1x4x8xf32> as tensor<2x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) outs(%r : memref<4x8xf32>) {
    %y = fusion.sum %x dims = [0] : tensor<2x4x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
    hir.yield %y : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  }
  func.return
}

// sum over the didx axis -> sharded on another axis = a reduce-scatter of this device's partial
// into its part. The partial is the input without its didx axis (local extent 1): a view, no copy.
// CHECK-LABEL: func.func @reduce_scatter(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<1x2x8xf32>, %[[R:[a-z0-9_]+]]: memref<1x8xf32>
// CHECK-NEXT:    %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[PARTIAL:[a-z0-9_]+]] = hir.alias_select %[[A]][%[[C0]]] axis 0 : memref<1x2x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = hir.reduce_scatter sum %[[PARTIAL]] into %[[R]] axis 0 mesh = [0, 1] : memref<2x8xf32, strided<[8, 1], offset: ?>>, memref<1x8xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return
func.func @reduce_scatter(%a: memref<1x2x8xf32>, %r: memref<1x8xf32>) {
  hir.launch ins(%x = %a : memref<1x2x8xf32> as tensor<2x2x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) outs(%r : memref<1x8xf32>) {
    %y = fusion.sum %x dims = [0] : tensor<2x2x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
    hir.yield %y : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  }
  func.return
}

// A sum over the didx axis and another one: the partial is computed (a local sum into a new buffer
// with the destination axis at full extent), then reduce-scattered.
// CHECK-LABEL: func.func @reduce_scatter_two_axes(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<1x2x8x3xf32>, %[[R:[a-z0-9_]+]]: memref<1x8xf32>
// CHECK-NEXT:    %[[PARTIAL:[a-z0-9_]+]] = hir.allocate() : memref<2x8xf32>
// CHECK-NEXT:    hir.launch ins(%[[X:[a-z0-9_]+]] = %[[A]] : memref<1x2x8x3xf32>) outs(%[[PARTIAL]] : memref<2x8xf32>) {
// CHECK-NEXT:      fusion.sum %[[X]] dims = [0, 3] : tensor<1x2x8x3xf32> -> tensor<2x8xf32>
// CHECK:         %[[W:[a-z0-9_]+]] = hir.reduce_scatter sum %[[PARTIAL]] into %[[R]] axis 0 mesh = [0, 1] : memref<2x8xf32>, memref<1x8xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return
func.func @reduce_scatter_two_axes(%a: memref<1x2x8x3xf32>, %r: memref<1x8xf32>) {
  hir.launch ins(%x = %a : memref<1x2x8x3xf32> as tensor<2x2x8x3xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>) outs(%r : memref<1x8xf32>) {
    %y = fusion.sum %x dims = [0, 3] : tensor<2x2x8x3xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
    hir.yield %y : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  }
  func.return
}

// set: replicated on mesh [2] -> replicated on [0, 1, 2, 3] = a broadcast whose root is the
// source device's position in the destination mesh.
// CHECK-LABEL: func.func @broadcast(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<8xf32>, %[[B:[a-z0-9_]+]]: memref<8xf32>
// CHECK-NEXT:    %[[ROOT:[a-z0-9_]+]] = arith.constant 2 : index
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = hir.broadcast %[[A]] into %[[B]] root %[[ROOT]] mesh = [0, 1, 2, 3] : memref<8xf32>, memref<8xf32>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    func.return
func.func @broadcast(%a: memref<8xf32>, %b: memref<8xf32>) {
  hir.launch ins(%x = %a : memref<8xf32> as tensor<8xf32, #fusion.parallel<[serial], mesh = [2]>>) outs(%b : memref<8xf32>) {
    %y = fusion.set %x : tensor<8xf32, #fusion.parallel<[serial], mesh = [2]>> -> tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1, 2, 3]>>
    hir.yield %y : tensor<8xf32, #fusion.parallel<[serial], mesh = [0, 1, 2, 3]>>
  }
  func.return
}

// A launch on plain tensors is compute, not communication: untouched.
// CHECK-LABEL: func.func @not_resharding(
// CHECK-NEXT:    hir.launch ins(%{{.*}} = %{{.*}} : memref<2x8xf32>) outs(%{{.*}} : memref<2x8xf32>) {
// CHECK-NEXT:      fusion.set
// CHECK-NEXT:      hir.yield
// CHECK-NEXT:    }
// CHECK-NOT:     hir.allgather
// CHECK-NEXT:    func.return
func.func @not_resharding(%a: memref<2x8xf32>, %b: memref<2x8xf32>) {
  hir.launch ins(%x = %a : memref<2x8xf32>) outs(%b : memref<2x8xf32>) {
    %y = fusion.set %x : tensor<2x8xf32> -> tensor<2x8xf32>
    hir.yield %y : tensor<2x8xf32>
  }
  func.return
}
