// RUN: hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'fusion-stream-overlap' | filecheck %s --check-prefix=ALWAYS
// RUN: hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'fusion-stream-overlap{overlap=never}' | filecheck %s --check-prefix=NEVER
// RUN: hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'fusion-stream-overlap{overlap=auto}' | filecheck %s --check-prefix=NEVER
// RUN: hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'stream-lowering{overlap=never backend=copy-engine}' | hir-opt | filecheck %s --check-prefix=LOWERED
// RUN: hir-opt %S/../../../../examples/multidevice/matmul_allreduce.mlir -p 'stream-lowering{overlap=auto}' | filecheck %s --check-prefix=ALLREDUCE
// RUN: hir-opt %S/../../../../examples/set_stream.mlir -p 'fusion-stream-overlap{overlap=auto}' | filecheck %s --check-prefix=SINGLE-AUTO
// RUN: hir-opt %S/../../../../examples/set_stream.mlir -p 'stream-lowering{overlap=never}' | filecheck %s --check-prefix=SINGLE-NEVER

// `always` (the default) leaves the program as written; `never` makes every stream axis serial,
// keeping the mesh and didx axes; `auto` with the nccl backend never pipelines (the per-chunk
// NCCL pipelines lost to the serial form at every size measured), and at these small shapes not
// with the copy engine either. Single-device functions are left alone by `auto` (nothing to
// overlap) but not by `never`.

// ALWAYS: -> tensor<2x64x128xf32, #fusion.parallel<[stream, serial, serial]>>

// NEVER-LABEL: func.func @main(
// NEVER-SAME:    %a: tensor<2x64x256xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
// NEVER-SAME:    -> tensor<2x64x128xf32> {
// NEVER-NEXT:    %c = fusion.matmul %a, %b : tensor<2x64x256xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<256x128xf32> -> tensor<2x64x128xf32>
// NEVER-NEXT:    func.return %c : tensor<2x64x128xf32>

// The copy-engine backend finds no loop over the shards: one all-gather, then one GEMM.
// LOWERED-LABEL: func.func @main(
// LOWERED:         %[[G:[a-z0-9_]+]] = hir.allocate() : memref<2x64x256xf32>
// LOWERED-NEXT:    %[[W:[0-9]+]] = hir.allgather %a into %[[G]] axis 0 mesh = [0, 1] : memref<1x64x256xf32>, memref<2x64x256xf32>
// LOWERED-NEXT:    hir.wait %[[W]]
// LOWERED-NEXT:    %[[C:[a-z0-9_]+]] = hir.allocate() : memref<2x64x128xf32>
// LOWERED-NEXT:    hir.launch ins(%{{.*}} = %[[G]], %{{.*}} = %b : memref<2x64x256xf32>, memref<256x128xf32>) outs(%[[C]] : memref<2x64x128xf32>)
// LOWERED-NOT:     hir.{{for|stream|barrier|peer_view}}
// LOWERED:         func.return %[[C]]

// A reduction over the devices: the partial GEMM, its sum, then one all-reduce.
// ALLREDUCE-LABEL: func.func @main(
// ALLREDUCE-NOT:     hir.for
// ALLREDUCE:         hir.allreduce sum %[[C:[a-z0-9_]+]] into %[[C]] mesh = [0, 1] : memref<4x32x48xf32>, memref<4x32x48xf32>
// ALLREDUCE-NOT:     hir.for

// SINGLE-AUTO: -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>

// SINGLE-NEVER-LABEL: func.func @main(
// SINGLE-NEVER-NOT:     hir.for
// SINGLE-NEVER-NOT:     hir.stream
// SINGLE-NEVER:         hir.launch
// SINGLE-NEVER-NOT:     hir.for
