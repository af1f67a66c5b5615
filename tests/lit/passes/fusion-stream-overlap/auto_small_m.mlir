// RUN: hir-opt %s -p 'fusion-stream-overlap{overlap=auto backend=copy-engine}' --split-input-file | filecheck %s
// RUN: hir-opt %s -p 'stream-lowering{overlap=auto backend=copy-engine}' --split-input-file | filecheck %s --check-prefix=LOWERED
// RUN: hir-opt %s -p 'fusion-stream-overlap{overlap=auto backend=copy-engine replay=true}' --split-input-file | filecheck %s --check-prefix=REPLAYED

// Replayed as a CUDA graph (replay=true) the pipeline's host time does not count: at M=1024 the
// model predicts 0.148 ms for the pipeline against 0.173 for the serial form, and keeps the stream
// axis; at M=4096 too.
// REPLAYED-LABEL: func.func @small_m(
// REPLAYED-SAME:    -> tensor<2x512x4096xbf16, #fusion.parallel<[stream, serial, serial]>>
// REPLAYED-LABEL: func.func @large_m(
// REPLAYED-SAME:    -> tensor<2x2048x4096xbf16, #fusion.parallel<[stream, serial, serial]>>

// The all-gather + GEMM at M=1024 (D=2, K=8192, N=4096, bf16), eager, with the built-in constants
// (lit sets HIR_DEVICE_CONSTANTS=builtin): the model predicts 0.173 ms for the serial form (0.068 ms
// of all-gather, 0.105 ms of GEMM) and 0.220 ms for the copy-engine pipeline, whose host time
// delays its first launch (passes/overlap_cost.py). The stream axis becomes serial: one
// all-gather, then one GEMM, on the caller's stream.

// CHECK-LABEL: func.func @small_m(
// CHECK-SAME:    -> tensor<2x512x4096xbf16>
// CHECK:         fusion.matmul %{{.*}}, %{{.*}} : tensor<2x512x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<8192x4096xbf16> -> tensor<2x512x4096xbf16>
// CHECK-NOT:     stream

// LOWERED-LABEL: func.func @small_m(
// LOWERED:         hir.allgather %{{.*}} into %[[G:[a-z0-9_]+]] axis 0 mesh = [0, 1] : memref<1x512x8192xbf16>, memref<2x512x8192xbf16>
// LOWERED-NEXT:    hir.wait
// LOWERED:         hir.launch ins(%{{.*}} = %[[G]], {{.*}}) outs(%{{.*}} : memref<2x512x4096xbf16>)
// LOWERED-NOT:     hir.stream
// LOWERED-NOT:     hir.for
func.func @small_m(%a: tensor<2x512x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %b: tensor<8192x4096xbf16>) -> tensor<2x512x4096xbf16, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x512x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<8192x4096xbf16> -> tensor<2x512x4096xbf16, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<2x512x4096xbf16, #fusion.parallel<[stream, serial, serial]>>
}

// -----

// At M=4096 the model predicts 0.535 ms for the serial form and 0.477 ms for the pipeline: the
// stream axis stays, and the copy-engine pipeline is built.

// CHECK-LABEL: func.func @large_m(
// CHECK-SAME:    -> tensor<2x2048x4096xbf16, #fusion.parallel<[stream, serial, serial]>>

// LOWERED-LABEL: func.func @large_m(
// LOWERED:         hir.device_index
// LOWERED:         hir.allocate() symmetric
// LOWERED:         hir.for
// LOWERED:         hir.peer_view
func.func @large_m(%a: tensor<2x2048x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %b: tensor<8192x4096xbf16>) -> tensor<2x2048x4096xbf16, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x2048x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<8192x4096xbf16> -> tensor<2x2048x4096xbf16, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<2x2048x4096xbf16, #fusion.parallel<[stream, serial, serial]>>
}
