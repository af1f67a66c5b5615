// RUN: hir-run %s -p stream-lowering --check --memory-stats | filecheck %s

// Five matmuls on one stream, one 64x64xf32 buffer (16384 bytes) each: a buffer is freed after
// the last launch that reads it, so at most three are live (%0, read by the last matmul, the one
// being read and the one being written), not five.

// CHECK: check: OK
// CHECK: peak allocated bytes: 49152

func.func @main(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = fusion.matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %1 = fusion.matmul %0, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %2 = fusion.matmul %1, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %3 = fusion.matmul %2, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %4 = fusion.matmul %3, %0 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  func.return %4 : tensor<64x64xf32>
}
