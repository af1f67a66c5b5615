// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.index_copy: source slices written at the positions a 1-D integer index names along
// `dim`, the last entry's where a position repeats (a KV cache's `cache[:, :, pos] = k`). No
// parallel encodings here: the race and poison corpora run every parallel function of tests/lit
// on random inputs, which are no valid indices.

// CHECK-LABEL: func.func @cache(
func.func @cache(%c: tensor<1x8x64x16xbf16>, %pos: tensor<1xi64>, %k: tensor<1x8x1x16xbf16>) -> tensor<1x8x64x16xbf16> {
  // CHECK-NEXT: %r = fusion.index_copy %c, %pos, %k dim = 2 : tensor<1x8x64x16xbf16>, tensor<1xi64>, tensor<1x8x1x16xbf16> -> tensor<1x8x64x16xbf16>
  %r = fusion.index_copy %c, %pos, %k dim = 2 : tensor<1x8x64x16xbf16>, tensor<1xi64>, tensor<1x8x1x16xbf16> -> tensor<1x8x64x16xbf16>
  // CHECK-NEXT: func.return %r : tensor<1x8x64x16xbf16>
  func.return %r : tensor<1x8x64x16xbf16>
}

// Rows, an i32 index, booleans.
// CHECK-LABEL: func.func @rows(
func.func @rows(%x: tensor<10x4xi1>, %i: tensor<3xi32>, %s: tensor<3x4xi1>) -> tensor<10x4xi1> {
  // CHECK-NEXT: %r = fusion.index_copy %x, %i, %s dim = 0 : tensor<10x4xi1>, tensor<3xi32>, tensor<3x4xi1> -> tensor<10x4xi1>
  %r = fusion.index_copy %x, %i, %s dim = 0 : tensor<10x4xi1>, tensor<3xi32>, tensor<3x4xi1> -> tensor<10x4xi1>
  // CHECK-NEXT: func.return %r : tensor<10x4xi1>
  func.return %r : tensor<10x4xi1>
}
