// RUN: not hir-opt %s -p 'hir-lower-communication{backend=ucx}' 2>&1 | filecheck %s --check-prefix=BACKEND
// RUN: not hir-opt %s -p 'stream-lowering{backend=copy-engine chunks=-1}' 2>&1 | filecheck %s --check-prefix=CHUNKS

// Bad options of the communication lowering are reported, with what is allowed.
// BACKEND: unknown communication backend 'ucx', expected one of nccl, copy-engine, ring
// BACKEND-NOT: Traceback
// CHUNKS: chunks must be >= 0 (0: chosen from the sizes), got -1
// CHUNKS-NOT: Traceback

func.func @main(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}
