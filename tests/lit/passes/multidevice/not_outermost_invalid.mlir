// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics
// RUN: not hir-opt %s --split-input-file --stream-lowering 2>&1 | filecheck %s --check-prefix=EXIT

// A collective needs a contiguous buffer with the communicated axis outermost in memory
// (nvFuser: "Resharding on an inner axis is not lowerable"). The sets go through contiguous
// temporaries (tests/lit/passes/resharding/inner_axis.mlir), and so does an even reduce-scatter
// (reduce_scatter_inner_axis.mlir); the all-reduce below is still reported at the fusion op it
// came from instead of emitting a collective the verifier rejects.
// Without --verify-diagnostics each chunk's error is printed and the exit status is 1.

// EXIT-COUNT-1: not_outermost_invalid.mlir:{{[0-9]+}}:3: error: 'hir.launch' op {{.*}} needs contiguous buffers
// EXIT-NOT:     Traceback

// All-reduce into chunk i of an output whose stream axis is inner: a strided view.
func.func @allreduce_strided_chunk(%x: tensor<2x8x4x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>) -> tensor<8x4x16xf32, #fusion.parallel<[serial, stream, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op all-reduce needs contiguous buffers with the communicated axis outermost in memory, but the buffer memref<8x16xf32, strided<[64, 1], offset: ?>> is a strided view (a chunk along an inner stream axis); make the stream axis outermost}}
  %y = fusion.sum %x dims = [0] : tensor<2x8x4x16xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<8x4x16xf32, #fusion.parallel<[serial, stream, serial], mesh = [0, 1]>>
  func.return %y : tensor<8x4x16xf32, #fusion.parallel<[serial, stream, serial], mesh = [0, 1]>>
}
