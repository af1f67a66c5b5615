// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.index_add: source slices added at the positions a 1-D integer index names along `dim`
// (an embedding's backward). No parallel encodings here: the race and poison corpora run every
// parallel function of tests/lit on random inputs, which are no valid indices.

// CHECK-LABEL: func.func @rows(
func.func @rows(%x: tensor<10x16xf32>, %ids: tensor<6xi64>, %rows: tensor<6x16xf32>) -> tensor<10x16xf32> {
  // CHECK-NEXT: %r = fusion.index_add %x, %ids, %rows dim = 0 : tensor<10x16xf32>, tensor<6xi64>, tensor<6x16xf32> -> tensor<10x16xf32>
  %r = fusion.index_add %x, %ids, %rows dim = 0 : tensor<10x16xf32>, tensor<6xi64>, tensor<6x16xf32> -> tensor<10x16xf32>
  // CHECK-NEXT: func.return %r : tensor<10x16xf32>
  func.return %r : tensor<10x16xf32>
}

// An inner axis, an i32 index, bf16 values.
// CHECK-LABEL: func.func @inner_axis(
func.func @inner_axis(%x: tensor<2x5x4xbf16>, %i: tensor<3xi32>, %s: tensor<2x3x4xbf16>) -> tensor<2x5x4xbf16> {
  // CHECK-NEXT: %r = fusion.index_add %x, %i, %s dim = 1 : tensor<2x5x4xbf16>, tensor<3xi32>, tensor<2x3x4xbf16> -> tensor<2x5x4xbf16>
  %r = fusion.index_add %x, %i, %s dim = 1 : tensor<2x5x4xbf16>, tensor<3xi32>, tensor<2x3x4xbf16> -> tensor<2x5x4xbf16>
  // CHECK-NEXT: func.return %r : tensor<2x5x4xbf16>
  func.return %r : tensor<2x5x4xbf16>
}

// Dynamic extents: the index's length is the source's extent along `dim`.
// CHECK-LABEL: func.func @dynamic(
func.func @dynamic(%x: tensor<?x8xf32>, %i: tensor<?xi64>, %s: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // CHECK-NEXT: %r = fusion.index_add %x, %i, %s dim = 0 : tensor<?x8xf32>, tensor<?xi64>, tensor<?x8xf32> -> tensor<?x8xf32>
  %r = fusion.index_add %x, %i, %s dim = 0 : tensor<?x8xf32>, tensor<?xi64>, tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK-NEXT: func.return %r : tensor<?x8xf32>
  func.return %r : tensor<?x8xf32>
}

// The generic form spells the property out.
// CHECK-LABEL: func.func @generic(
func.func @generic(%x: tensor<4xi32>, %i: tensor<2xi64>, %s: tensor<2xi32>) -> tensor<4xi32> {
  // CHECK-NEXT: %r = fusion.index_add %x, %i, %s dim = 0 : tensor<4xi32>, tensor<2xi64>, tensor<2xi32> -> tensor<4xi32>
  %r = "fusion.index_add"(%x, %i, %s) <{dim = 0 : i64}> : (tensor<4xi32>, tensor<2xi64>, tensor<2xi32>) -> tensor<4xi32>
  // CHECK-NEXT: func.return %r : tensor<4xi32>
  func.return %r : tensor<4xi32>
}
