// RUN: hir-opt %s --split-input-file -p 'stream-lowering{backend=copy-engine}' --verify-diagnostics
// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s --check-prefix=NCCL

// The copy-engine all-reduce cuts the output chunk into one block per device. When the devices
// divide no axis of it, it is refused at the sum, not lowered unevenly; the NCCL backend lowers
// the same modules (one all-reduce per chunk).

// NCCL-COUNT-2: hir.allreduce sum

// 3x5 rows and columns per chunk, 2 devices.
func.func @uneven_two(%a: tensor<2x2x3x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>,
                      %b: tensor<2x8x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x3x5xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<2x2x3x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x8x5xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x3x5xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  // expected-error@+1 {{'hir.launch' op the copy-engine all-reduce cuts the output chunk into one block per device, but the 2 devices of mesh [0, 1] divide no axis of memref<3x5xf32, strided<[5, 1], offset: ?>> evenly; lower it with backend=nccl}}
  %c = fusion.sum %p dims = [1] : tensor<2x2x3x5xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x3x5xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<2x3x5xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
}

// -----

// 6x6 per chunk, 4 devices.
func.func @uneven_four(%a: tensor<2x4x6x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2, 3]>>,
                       %b: tensor<4x8x6xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>)
    -> tensor<2x6x6xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1, 2, 3]>> {
  %p = fusion.matmul %a, %b : tensor<2x4x6x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<4x8x6xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<2x4x6x6xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>>
  // expected-error@+1 {{the 4 devices of mesh [0, 1, 2, 3] divide no axis of memref<6x6xf32, strided<[6, 1], offset: ?>> evenly}}
  %c = fusion.sum %p dims = [1] : tensor<2x4x6x6xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<2x6x6xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %c : tensor<2x6x6xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1, 2, 3]>>
}
