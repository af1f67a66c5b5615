// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.sdpa's verifier: shapes, mask, causal, element types, and the axes that cannot be split.

func.func @rank(%q: tensor<16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa' op query, key and value must have the same rank >= 2 ([..., L, E], [..., S, E], [..., S, Ev]), got 16x8, 2x16x8 and 2x16x8}}
  %o = fusion.sdpa %q, %k, %v scale = 1.0 : tensor<16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<16x8xf32>
  func.return
}

// -----

func.func @heads(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa' op query, key and value must have the same batch axes, got 2x4x16x8, 2x2x16x8 and 2x2x16x8}}
  %o = fusion.sdpa %q, %k, %v scale = 1.0 : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x4x16x8xf32>
  func.return
}

// -----

func.func @embedding(%q: tensor<2x16x8xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa' op query 2x16x8 and key 2x16x4 differ in their last (E) extent}}
  %o = fusion.sdpa %q, %k, %v scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x4xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @sequence(%q: tensor<2x16x8xf32>, %k: tensor<2x12x8xf32>, %v: tensor<2x10x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa' op key 2x12x8 and value 2x10x8 differ in their sequence (S) extent}}
  %o = fusion.sdpa %q, %k, %v scale = 1.0 : tensor<2x16x8xf32>, tensor<2x12x8xf32>, tensor<2x10x8xf32> -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @result(%q: tensor<2x16x8xf32>, %k: tensor<2x12x8xf32>, %v: tensor<2x12x6xf32>) {
  // expected-error@+1 {{'fusion.sdpa' op result shape 2x16x8 does not match the expected shape 2x16x6}}
  %o = fusion.sdpa %q, %k, %v scale = 1.0 : tensor<2x16x8xf32>, tensor<2x12x8xf32>, tensor<2x12x6xf32> -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @mask_shape(%q: tensor<2x16x8xf32>, %k: tensor<2x12x8xf32>, %v: tensor<2x12x8xf32>, %m: tensor<16x16xi1>) {
  // expected-error@+1 {{'fusion.sdpa' op mask 16x16 does not broadcast to the scores 2x16x12}}
  %o = fusion.sdpa %q, %k, %v mask %m scale = 1.0 : tensor<2x16x8xf32>, tensor<2x12x8xf32>, tensor<2x12x8xf32>, tensor<16x16xi1> -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @mask_rank(%q: tensor<16x8xf32>, %k: tensor<12x8xf32>, %v: tensor<12x8xf32>, %m: tensor<1x16x12xi1>) {
  // expected-error@+1 {{'fusion.sdpa' op mask 1x16x12 does not broadcast to the scores 16x12}}
  %o = fusion.sdpa %q, %k, %v mask %m scale = 1.0 : tensor<16x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<1x16x12xi1> -> tensor<16x8xf32>
  func.return
}

// -----

func.func @mask_type(%q: tensor<16x8xf32>, %k: tensor<12x8xf32>, %v: tensor<12x8xf32>, %m: tensor<16x12xf16>) {
  // expected-error@+1 {{'fusion.sdpa' op the mask must be i1 or f32, got f16}}
  %o = fusion.sdpa %q, %k, %v mask %m scale = 1.0 : tensor<16x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<16x12xf16> -> tensor<16x8xf32>
  func.return
}

// -----

func.func @mask_and_causal(%q: tensor<16x8xf32>, %k: tensor<16x8xf32>, %v: tensor<16x8xf32>, %m: tensor<16x16xi1>) {
  // expected-error@+1 {{'fusion.sdpa' op a mask and causal exclude each other (torch refuses both): fold the mask into one}}
  %o = fusion.sdpa %q, %k, %v mask %m causal scale = 1.0 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xi1> -> tensor<16x8xf32>
  func.return
}

// -----

func.func @integers(%q: tensor<16x8xi32>, %k: tensor<16x8xi32>, %v: tensor<16x8xi32>) {
  // expected-error@+1 {{'fusion.sdpa' op fusion.sdpa needs a floating-point element type, got i32}}
  %o = fusion.sdpa %q, %k, %v scale = 1.0 : tensor<16x8xi32>, tensor<16x8xi32>, tensor<16x8xi32> -> tensor<16x8xi32>
  func.return
}

// -----

func.func @mixed(%q: tensor<16x8xf32>, %k: tensor<16x8xbf16>, %v: tensor<16x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa' op operand #1 has element type bf16, the result f32}}
  %o = fusion.sdpa %q, %k, %v scale = 1.0 : tensor<16x8xf32>, tensor<16x8xbf16>, tensor<16x8xf32> -> tensor<16x8xf32>
  func.return
}

// -----

// A result sharded over its queries: each device would need every key of its rows' sequence,
// and a causal mask the rows' absolute positions. (Sharded operands are gathered first.)
func.func @result_sharded_rows(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa' op result axis 1 is didx: attention reads the L, S and E axes whole, so only the batch and head axes can be split over streams or devices}}
  %o = fusion.sdpa %q, %k, %v scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return
}

// -----

func.func @result_sharded_columns(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa' op result axis 2 is didx}}
  %o = fusion.sdpa %q, %k, %v scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32, #fusion.parallel<[serial, serial, didx], mesh = [0, 1]>>
  func.return
}

// -----

// Streamed over the queries: a causal mask depends on each query's absolute position.
func.func @result_streamed_rows(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa' op result axis 1 is stream: attention reads the L, S and E axes whole}}
  %o = fusion.sdpa %q, %k, %v causal scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32, #fusion.parallel<[serial, stream(2), serial]>>
  func.return
}
