// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering | filecheck %s

// Slicing must not change what an op computes: on the operands without their iterated axes, the
// op's axis map must be its own minus those axes. torch.matmul reads the last two axes of an
// operand of rank >= 2 as the matrix: slicing N off a batched %b (or M off a batched %a) makes it
// read a batch axis as K (or M). Such a loop would compute wrong values (with these square
// extents, of the right shape), so the lowering refuses it.

func.func @n_of_batched_b(%a: tensor<4x4xf32>, %b: tensor<4x4x4xf32>) -> tensor<4x4x4xf32, #fusion.parallel<[serial, serial, stream]>> {
  // expected-error@+1 {{'fusion.matmul' op cannot run slice by slice on result axis 2: on its operands without axis 2 of operand #1 it computes something else (stream another axis)}}
  %c = fusion.matmul %a, %b : tensor<4x4xf32>, tensor<4x4x4xf32> -> tensor<4x4x4xf32, #fusion.parallel<[serial, serial, stream]>>
  func.return %c : tensor<4x4x4xf32, #fusion.parallel<[serial, serial, stream]>>
}

// -----

func.func @m_of_batched_a(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32, #fusion.parallel<[serial, stream, serial]>> {
  // expected-error@+1 {{'fusion.matmul' op cannot run slice by slice on result axis 1: on its operands without axis 1 of operand #0 it computes something else (stream another axis)}}
  %c = fusion.matmul %a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32, #fusion.parallel<[serial, stream, serial]>>
  func.return %c : tensor<2x3x5xf32, #fusion.parallel<[serial, stream, serial]>>
}

// -----

// A 1-D %a with a batched %b: slicing N leaves a 2-D %b whose contraction axis is its batch axis.

func.func @n_with_vector_a(%a: tensor<4xf32>, %b: tensor<3x4x5xf32>) -> tensor<3x5xf32, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.matmul' op cannot run slice by slice on result axis 1: on its operands without axis 2 of operand #1 it computes something else (stream another axis)}}
  %c = fusion.matmul %a, %b : tensor<4xf32>, tensor<3x4x5xf32> -> tensor<3x5xf32, #fusion.parallel<[serial, stream]>>
  func.return %c : tensor<3x5xf32, #fusion.parallel<[serial, stream]>>
}

// -----

// The same axes split into stream(2) chunks keep the operands' ranks, so the matmul is unchanged.

// CHECK: func.func @chunks_are_fine(
// CHECK: hir.alias_chunk %b{{.*}} axis 2 chunks 2
// CHECK: fusion.matmul {{.*}} : tensor<4x4xf32>, tensor<4x4x2xf32> -> tensor<4x4x2xf32>
func.func @chunks_are_fine(%a: tensor<4x4xf32>, %b: tensor<4x4x4xf32>) -> tensor<4x4x4xf32, #fusion.parallel<[serial, serial, stream(2)]>> {
  %c = fusion.matmul %a, %b : tensor<4x4xf32>, tensor<4x4x4xf32> -> tensor<4x4x4xf32, #fusion.parallel<[serial, serial, stream(2)]>>
  func.return %c : tensor<4x4x4xf32, #fusion.parallel<[serial, serial, stream(2)]>>
}

// -----

// A batched %a streamed on M against a 2-D %b is fine: the sliced %a[B, K] times %b[K, N] is
// %c[:, i, :].

// CHECK: func.func @m_of_batched_a_with_matrix_b(
// CHECK: fusion.matmul {{.*}} : tensor<2x4xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
func.func @m_of_batched_a_with_matrix_b(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32, #fusion.parallel<[serial, stream, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32, #fusion.parallel<[serial, stream, serial]>>
  func.return %c : tensor<2x3x5xf32, #fusion.parallel<[serial, stream, serial]>>
}
