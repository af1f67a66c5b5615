// RUN: not hir-opt %S/../../../../examples/ag_matmul.mlir -p 'fusion-stream-overlap{overlap=never}' 2>&1 | filecheck %s
// RUN: hir-opt %S/../../../../examples/ag_matmul.mlir -p 'fusion-stream-overlap{overlap=auto}' | filecheck %s --check-prefix=AUTO
// RUN: not hir-opt %S/../../../../examples/set_stream.mlir -p 'fusion-stream-overlap{overlap=sometimes}' 2>&1 | filecheck %s --check-prefix=MODE
// RUN: not hir-opt %S/../../../../examples/set_stream.mlir -p 'stream-lowering{overlap=auto backend=ucx}' 2>&1 | filecheck %s --check-prefix=BACKEND
// RUN: not hir-opt %S/../../../../examples/set_stream.mlir -p 'fusion-stream-overlap{replay=maybe}' 2>&1 | filecheck %s --check-prefix=REPLAY
// RUN: env HIR_DEVICE_CONSTANTS=%t.missing.json not hir-opt %S/../../../../examples/ag_matmul.mlir -p 'fusion-stream-overlap{overlap=auto}' 2>&1 | filecheck %s --check-prefix=CONSTANTS
// RUN: echo '{"machine": "a GPU"' > %t.broken.json
// RUN: env HIR_DEVICE_CONSTANTS=%t.broken.json not hir-opt %S/../../../../examples/ag_matmul.mlir -p 'stream-lowering{overlap=auto}' 2>&1 | filecheck %s --check-prefix=BROKEN

// The chunked all-gather + GEMM (examples/ag_matmul.mlir, A[S=4, didx(2), ...]): its serial form
// would gather A along axis 1, behind an axis of extent 4, which no collective takes. `never`
// reports it at the op; `auto` keeps the pipeline, the only form the lowering takes.

// CHECK: examples/ag_matmul.mlir:6:3: error: 'fusion.matmul' op overlap=never: cannot make the stream axes serial: operand #0 would be gathered whole along its didx axis 1, which has axes of extent 4 before it (collectives need the gathered axis outermost)
// CHECK-NOT: Traceback

// AUTO: -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>

// MODE: hir-opt: error: invalid options for pass 'fusion-stream-overlap': overlap must be one of always, auto, never, by-shard, got 'sometimes'
// MODE-NOT: Traceback

// BACKEND: unknown communication backend 'ucx', expected one of nccl, copy-engine, ring
// BACKEND-NOT: Traceback

// REPLAY: hir-opt: error: option 'replay' of pass 'fusion-stream-overlap' expects bool, got 'maybe'
// REPLAY-NOT: Traceback

// A device-constants file that is not there, or does not read, is named (hir-calibrate writes one).
// CONSTANTS: hir-opt: error: overlap=auto: HIR_DEVICE_CONSTANTS={{.*}}.missing.json: no such file (or `builtin`)
// CONSTANTS-NOT: Traceback
// BROKEN: hir-opt: error: overlap=auto: {{.*}}.broken.json: not a JSON file of device constants ({{.*}}; recalibrate: hir-calibrate)
// BROKEN-NOT: Traceback
