// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine}' --verify-diagnostics
// RUN: hir-opt %s -p 'stream-lowering{backend=ring}' --verify-diagnostics

// An operand sharded as one index over 2 devices and broadcast into the result's didx axis is
// gathered first; the copy-engine and ring backends move blocks of one index per device and do not
// pad, so they report the op that needs the gather (the nccl backend lowers it: broadcast_axis.mlir).

func.func @sharded_one_index(%x: tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %y: tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> {
  // expected-error-re@+1 {{'hir.launch' op backend={{copy-engine|ring}} does not lower a resharding of an uneven didx axis (axis 0 has extent 1 over 2 devices, not one index per device): use backend=nccl, which pads the shards to equal pieces}}
  %z = fusion.matmul %x, %y : tensor<1x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<2x16x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  func.return %z : tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
}
