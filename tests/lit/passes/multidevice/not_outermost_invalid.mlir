// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics
// RUN: not hir-opt %s --split-input-file --stream-lowering 2>&1 | filecheck %s --check-prefix=EXIT

// A collective needs a contiguous buffer with the communicated axis outermost in memory
// (nvFuser: "Resharding on an inner axis is not lowerable"). hir-lower-communication reports the
// resharding at the fusion op it came from instead of emitting a collective the verifier rejects.
// Without --verify-diagnostics each chunk's error is printed and the exit status is 1.

// EXIT-COUNT-5: not_outermost_invalid.mlir:{{[0-9]+}}:3: error: 'hir.launch' op {{.*}} needs contiguous buffers
// EXIT-NOT:     Traceback

// All-gather: the didx axis comes after an axis of extent 8, so the gathered rows are not contiguous.
func.func @inner_axis(%x: tensor<8x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>) -> tensor<8x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op all-gather along axis 1 needs contiguous buffers with the communicated axis outermost in memory, but the buffer memref<8x2x16xf32> has larger axes before it; make the didx axis the outermost axis (after the stream axis)}}
  %y = fusion.set %x : tensor<8x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<8x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<8x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
}

// -----

// AG+GEMM with the stream axis inside the didx axis: chunk i of the gathered A is a strided view
// (the devices' rows of chunk i lie 4 chunks apart). The error names the matmul, for which
// fusion-decompose-resharding inserted the all-gather.
func.func @stream_inside_didx(%a: tensor<2x4x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>, %b: tensor<16x32xf32>) -> tensor<2x4x8x32xf32, #fusion.parallel<[serial, stream, serial, serial]>> {
  // expected-error@+1 {{'hir.launch' op all-gather along axis 0 needs contiguous buffers with the communicated axis outermost in memory, but the buffer memref<2x8x16xf32, strided<[512, 16, 1], offset: ?>> is a strided view (a chunk along an inner stream axis); make the stream axis outermost}}
  %c = fusion.matmul %a, %b : tensor<2x4x8x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>, tensor<16x32xf32> -> tensor<2x4x8x32xf32, #fusion.parallel<[serial, stream, serial, serial]>>
  func.return %c : tensor<2x4x8x32xf32, #fusion.parallel<[serial, stream, serial, serial]>>
}

// -----

// stream(2): chunks of 2 row blocks, so each chunk of the gathered A has an axis of extent 2
// before the gathered one.
func.func @chunk_of_two(%a: tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<16x32xf32>) -> tensor<4x2x8x32xf32, #fusion.parallel<[stream(2), serial, serial, serial]>> {
  // expected-error@+1 {{'hir.launch' op all-gather along axis 1 needs contiguous buffers with the communicated axis outermost in memory, but the buffer memref<2x2x8x16xf32, strided<[256, 128, 16, 1], offset: ?>> has larger axes before it}}
  %c = fusion.matmul %a, %b : tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<16x32xf32> -> tensor<4x2x8x32xf32, #fusion.parallel<[stream(2), serial, serial, serial]>>
  func.return %c : tensor<4x2x8x32xf32, #fusion.parallel<[stream(2), serial, serial, serial]>>
}

// -----

// Reduce-scatter: the destination's didx axis is not outermost.
func.func @reduce_scatter_inner(%x: tensor<2x4x2x8xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>) -> tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op reduce-scatter along axis 1 needs contiguous buffers with the communicated axis outermost in memory, but the buffer memref<4x2x8xf32> has larger axes before it}}
  %y = fusion.sum %x dims = [0] : tensor<2x4x2x8xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}

// -----

// All-reduce into chunk i of an output whose stream axis is inner: a strided view.
func.func @allreduce_strided_chunk(%x: tensor<2x8x4x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>) -> tensor<8x4x16xf32, #fusion.parallel<[serial, stream, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op all-reduce needs contiguous buffers with the communicated axis outermost in memory, but the buffer memref<8x16xf32, strided<[64, 1], offset: ?>> is a strided view (a chunk along an inner stream axis); make the stream axis outermost}}
  %y = fusion.sum %x dims = [0] : tensor<2x8x4x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<8x4x16xf32, #fusion.parallel<[serial, stream, serial], mesh = [0, 1]>>
  func.return %y : tensor<8x4x16xf32, #fusion.parallel<[serial, stream, serial], mesh = [0, 1]>>
}
