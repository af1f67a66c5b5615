// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine}' | filecheck %s
// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine release=end}' | filecheck %s --check-prefix=END

// GEMM + reduce-scatter with the rows in one chunk (the stream loop runs one iteration, on the
// caller's stream): the comm stream is not forked before the loop; its first work is the wait for
// the first peer's GEMM, then the release barrier, then that partial's push. So the host
// launches the first GEMM before any of the comm stream's work.

// CHECK:      %[[RECEIVED:[a-z0-9_]+]] = hir.allocate() symmetric
// CHECK-NOT:  hir.synchronize
// CHECK-NOT:  hir.barrier
// CHECK:      %[[TO:[a-z0-9_]+]] = arith.remui
// CHECK:      hir.launch ins(%{{.*}}) outs(%{{.*}}) {
// CHECK-NEXT:   fusion.matmul
// CHECK:      hir.set_current_stream %comm
// CHECK-NEXT: hir.synchronize %main
// CHECK-NEXT: hir.barrier mesh = [0, 1]
// CHECK-NEXT: %[[PEER:[a-z0-9_]+]] = hir.peer_view %[[RECEIVED]] device %[[TO]] mesh = [0, 1]
// CHECK:      hir.launch
// CHECK-NEXT:   fusion.set
// The peeled step was the only peer's (D = 2): no loop over the peers is left.
// CHECK-NOT:  hir.for
// Every device has pushed once the comm stream passes the second barrier; no release at the end.
// CHECK:      hir.set_current_stream %comm
// CHECK-NEXT: hir.barrier mesh = [0, 1]
// CHECK-NOT:  hir.barrier
// CHECK:      func.return

// release=end keeps the fork before the loop and the barrier before the return.
// END:      hir.allocate() symmetric
// END-NEXT: hir.set_current_stream %comm
// END-NEXT: hir.synchronize %main
// END-NEXT: hir.set_current_stream %main
// END:      hir.synchronize %reduce
// END-NEXT: hir.barrier mesh = [0, 1]
// END-NEXT: func.return

func.func @main(%a: tensor<1x2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>,
                %b: tensor<1x2x1x16x4xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<1x2x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<1x2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>, tensor<1x2x1x16x4xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<1x2x2x8x4xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<1x2x2x8x4xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<1x2x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<1x2x8x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}
