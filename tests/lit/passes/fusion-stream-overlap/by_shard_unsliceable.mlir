// RUN: hir-opt %s --split-input-file -p 'fusion-stream-overlap{overlap=by-shard}' | filecheck %s
// RUN: hir-opt %s --split-input-file -p 'stream-lowering{overlap=by-shard}' | filecheck %s --check-prefix=LOWERED

// `by-shard` moves a stream axis of extent 1 onto the axis after it only where every op whose
// result moves computes that result slice by slice along the new axis. Here the matmul's stream
// axis would land on M, and an operand of rank 4 without its M axis is one that torch.matmul reads
// with a batch axis as M: the function is left as written (it used to be moved, then refused by
// convert-fusion-to-hir: "cannot run slice by slice on result axis 2").

// CHECK-LABEL: func.func @batched
// CHECK:         fusion.matmul {{.*}} -> tensor<3x1x4x6xf32, #fusion.parallel<[serial, stream, serial, serial]>>
// LOWERED-LABEL: func.func @batched
// LOWERED:         fusion.matmul {{.*}} : tensor<3x4x5xf32>, tensor<3x5x6xf32> -> tensor<3x4x6xf32>
func.func @batched(%a: tensor<3x1x4x5xf32>, %b: tensor<3x1x5x6xf32>) -> tensor<3x1x4x6xf32, #fusion.parallel<[serial, stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<3x1x4x5xf32>, tensor<3x1x5x6xf32> -> tensor<3x1x4x6xf32, #fusion.parallel<[serial, stream, serial, serial]>>
  func.return %c : tensor<3x1x4x6xf32, #fusion.parallel<[serial, stream, serial, serial]>>
}

// -----

// The same on a mesh of one device, where every didx axis has extent 1 and so do the stream axes
// over it: the matmul's stream axis (its batch axis 1, of extent 1) is not moved onto M.

// CHECK-LABEL: func.func @one_device
// CHECK:         fusion.matmul {{.*}} -> tensor<3x1x3x3xf32, #fusion.parallel<[serial, stream, serial, serial], mesh = [0]>>
// LOWERED-LABEL: func.func @one_device
// LOWERED:         fusion.matmul
func.func @one_device(%a: tensor<3x1x3x3xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0]>>, %b: tensor<3x1x3x3xf32, #fusion.parallel<[serial, serial, serial, serial], mesh = [0]>>) -> tensor<3x1x3x3xf32, #fusion.parallel<[serial, stream, serial, serial], mesh = [0]>> {
  %c = fusion.matmul %a, %b : tensor<3x1x3x3xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0]>>, tensor<3x1x3x3xf32, #fusion.parallel<[serial, serial, serial, serial], mesh = [0]>> -> tensor<3x1x3x3xf32, #fusion.parallel<[serial, stream, serial, serial], mesh = [0]>>
  func.return %c : tensor<3x1x3x3xf32, #fusion.parallel<[serial, stream, serial, serial], mesh = [0]>>
}
