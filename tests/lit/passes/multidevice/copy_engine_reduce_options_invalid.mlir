// RUN: not hir-opt %s -p 'stream-lowering{backend=copy-engine chunks=5}' 2>&1 | filecheck %s --check-prefix=PIECES
// RUN: not hir-opt %s -p 'stream-lowering{backend=copy-engine policy=resharding-only}' 2>&1 | filecheck %s --check-prefix=SEGMENT
// RUN: not hir-opt %s -p 'stream-lowering{backend=copy-engine release=never}' 2>&1 | filecheck %s --check-prefix=RELEASE
// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine}' | filecheck %s --check-prefix=OK

// What the copy-engine reduce-scatter cannot do is reported at the sum (line 27), with the way out:
// chunks=5 pieces of the own GEMM divide no axis of the 1x16x48 block;
// PIECES: copy_engine_reduce_options_invalid.mlir:27:3: error: 'hir.launch' op the copy-engine reduce-scatter cuts the own GEMM and its adds into chunks=5 pieces, which divide no axis of the block 1x16x48; lower it with backend=nccl
// PIECES-NOT: Traceback
// with every op in one segment, the partial's producer is the matmul and the tanh together, which
// cannot be split by destination through one axis map;
// SEGMENT: copy_engine_reduce_options_invalid.mlir:27:3: error: 'hir.launch' op the copy-engine reduce-scatter splits the partial's producer by destination, but its producer is not one launch of a single fusion op (a segment of several ops); lower it with backend=nccl
// SEGMENT-NOT: Traceback
// an unknown release is named with the known ones.
// RELEASE: hir-opt: error: invalid options for pass 'stream-lowering': release must be one of auto, end, start, got 'never'
// RELEASE-NOT: Traceback
// With the default pieces and segments the same module lowers (the tanh is its own launch, split by destination).
// OK: hir.barrier
// OK: fusion.tanh {{.*}} -> tensor<1x1x16x48xf32>
// OK: hir.peer_view %received

func.func @main(%a: tensor<4x2x2x16x64xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>,
                %b: tensor<1x2x1x64x48xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<4x2x2x16x64xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>, tensor<1x2x1x64x48xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<4x2x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>>
  %q = fusion.tanh %p : tensor<4x2x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<4x2x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %q dims = [1] : tensor<4x2x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}
