// RUN: not hir-opt %s -p 'fusion-stream-overlap{overlap=never}' 2>&1 | filecheck %s
// RUN: hir-opt %s -p 'fusion-stream-overlap{overlap=auto}' | filecheck %s --check-prefix=AUTO
// RUN: not hir-opt %s -p 'fusion-stream-overlap{overlap=sometimes}' 2>&1 | filecheck %s --check-prefix=MODE
// RUN: not hir-opt %s -p 'stream-lowering{overlap=auto backend=ucx}' 2>&1 | filecheck %s --check-prefix=BACKEND

// The chunked all-gather + GEMM (A[S=4, didx(2), ...]): its serial form would gather A along
// axis 1, behind an axis of extent 4, which no collective takes. `never` reports it at the op;
// `auto` keeps the pipeline, the only form the lowering takes.

// CHECK: never_invalid.mlir:[[# @LINE + 12]]:3: error: 'fusion.matmul' op overlap=never: cannot make the stream axes serial: operand #0 would be gathered whole along its didx axis 1, which has axes of extent 4 before it (collectives need the gathered axis outermost)
// CHECK-NOT: Traceback

// AUTO: -> tensor<4x2x16x24xf32, #fusion.parallel<[stream, serial, serial, serial]>>

// MODE: fusion-stream-overlap: overlap must be one of always, auto, never, got 'sometimes'
// MODE-NOT: Traceback

// BACKEND: unknown communication backend 'ucx', expected one of nccl, copy-engine
// BACKEND-NOT: Traceback

func.func @main(%a: tensor<4x2x16x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<32x24xf32>) -> tensor<4x2x16x24xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<4x2x16x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<32x24xf32> -> tensor<4x2x16x24xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %c : tensor<4x2x16x24xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}
