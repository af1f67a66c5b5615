// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics
// RUN: not hir-opt %s --split-input-file --stream-lowering 2>&1 | filecheck %s --check-prefix=EXIT

// A collective needs a contiguous buffer with the communicated axis outermost in memory
// (nvFuser: "Resharding on an inner axis is not lowerable"). The sets go through contiguous
// temporaries (tests/lit/passes/resharding/inner_axis.mlir), and so do an even reduce-scatter
// (reduce_scatter_inner_axis.mlir) and an all-reduce into a strided chunk
// (allreduce_strided_chunk.mlir); the padded reduce-scatter onto an uneven inner axis below is
// still reported at the fusion op it came from instead of emitting a collective the verifier
// rejects. Without --verify-diagnostics the error is printed and the exit status is 1.

// EXIT-COUNT-1: not_outermost_invalid.mlir:{{[0-9]+}}:3: error: 'hir.launch' op {{.*}} needs contiguous buffers
// EXIT-NOT:     Traceback

// A reduce-scatter onto an inner didx axis of 5 indices over 2 devices: the padded partial sums.
func.func @reduce_scatter_uneven_inner(%x: tensor<2x4x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<4x5xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op reduce-scatter along axis 1 needs contiguous buffers with the communicated axis outermost in memory, but the buffer memref<4x6xf32> has larger axes before it; make the didx axis the outermost axis (after the stream axis)}}
  %y = fusion.sum %x dims = [0] : tensor<2x4x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<4x5xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %y : tensor<4x5xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}
