// RUN: hir-opt %S/../../../../examples/multidevice/tp_mlp.mlir -p 'fusion-stream-overlap{overlap=by-shard}' | filecheck %s
// RUN: hir-opt %S/../../../../examples/ag_matmul.mlir -p 'fusion-stream-overlap{overlap=by-shard}' | filecheck %s --check-prefix=CHUNKED
// RUN: hir-opt %s -p 'fusion-stream-overlap{overlap=by-shard}' | filecheck %s --check-prefix=ALLREDUCE

// `by-shard` moves a stream axis of extent 1 (rows in one chunk) onto the axis after it: the D
// blocks of rows, so the loop iterates over the devices' shards; where that axis is the didx axis
// (the reduce-scatter's result), the stream axis goes.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    -> tensor<1x2x32x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>
// CHECK:         %h = fusion.matmul {{.*}} -> tensor<2x1x2x32x64xf32, #fusion.parallel<[didx, serial, stream, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %g = fusion.gelu {{.*}} -> tensor<2x1x2x32x64xf32, #fusion.parallel<[didx, serial, stream, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %p = fusion.matmul {{.*}} -> tensor<2x1x2x32x32xf32, #fusion.parallel<[didx, serial, stream, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %y = fusion.sum %p dims = [0] : {{.*}} -> tensor<1x2x32x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>

// A stream axis of 4 chunks is left as written.
// CHUNKED: -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>

// So is an all-reduce (rows replicated, in one chunk): pipelined by shard it would reduce blocks
// along an inner axis.
// ALLREDUCE: %c = fusion.sum %p dims = [1] : {{.*}} -> tensor<1x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>

func.func @main(%a: tensor<1x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>,
                %b: tensor<2x64x48xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>)
    -> tensor<1x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<1x2x32x64xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x64x48xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<1x2x32x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<1x2x32x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<1x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<1x32x48xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
}
