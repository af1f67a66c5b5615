// RUN: hir-opt %s -p 'fusion-stream-overlap' | filecheck %s --check-prefix=ALWAYS
// RUN: hir-opt %s -p 'fusion-stream-overlap{overlap=never}' | filecheck %s --check-prefix=NEVER
// RUN: hir-opt %s -p 'fusion-stream-overlap{overlap=auto}' | filecheck %s --check-prefix=NCCL
// RUN: hir-opt %s -p 'stream-lowering{overlap=never}' | hir-opt | filecheck %s --check-prefix=LOWERED

// `always` (the default) leaves the program as written; `never` makes every stream axis serial,
// stream(N) included, keeping the mesh and didx axes; `auto` with the nccl backend never
// pipelines (the per-chunk NCCL pipelines lost to the serial form at every size measured).
// Single-device functions are left alone by `auto` (nothing to overlap) but not by `never`.

// ALWAYS: tensor<2x8x16xf32, #fusion.parallel<[stream(2), serial, serial]>>
// ALWAYS: tensor<4x8xf32, #fusion.parallel<[stream, serial]>>

// NEVER-LABEL: func.func @ag_matmul(%a: tensor<2x8x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %b: tensor<32x16xf32>) -> tensor<2x8x16xf32> {
// NEVER-NEXT:    %c = fusion.matmul %a, %b : tensor<2x8x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<32x16xf32> -> tensor<2x8x16xf32>
// NEVER-NEXT:    %r = fusion.relu %c : tensor<2x8x16xf32> -> tensor<2x8x16xf32>
// NEVER-NEXT:    func.return %r : tensor<2x8x16xf32>
// NEVER-LABEL: func.func @single_device(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
// NEVER-NOT:   stream

// NCCL-LABEL: func.func @ag_matmul(
// NCCL-SAME:    -> tensor<2x8x16xf32> {
// NCCL-LABEL: func.func @single_device(
// NCCL-SAME:    -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>

// LOWERED-LABEL: func.func @ag_matmul(
// LOWERED:         hir.allgather
// LOWERED-NOT:     hir.for
// LOWERED-LABEL: func.func @single_device(
// LOWERED-NOT:     hir.for
// LOWERED:         func.return

func.func @ag_matmul(%a: tensor<2x8x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %b: tensor<32x16xf32>) -> tensor<2x8x16xf32, #fusion.parallel<[stream(2), serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x8x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<32x16xf32> -> tensor<2x8x16xf32, #fusion.parallel<[stream(2), serial, serial]>>
  %r = fusion.relu %c : tensor<2x8x16xf32, #fusion.parallel<[stream(2), serial, serial]>> -> tensor<2x8x16xf32, #fusion.parallel<[stream(2), serial, serial]>>
  func.return %r : tensor<2x8x16xf32, #fusion.parallel<[stream(2), serial, serial]>>
}

func.func @single_device(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
