// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.alias_chunk: axis in range, chunks >= 1 dividing a static extent, result type the chunk's.

func.func @axis_out_of_range(%m: memref<8x4xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_chunk' op axis 2 is out of range for memref<8x4xf32> of rank 2}}
  %a = hir.alias_chunk %m[%i] axis 2 chunks 2 : memref<8x4xf32> -> memref<8x4xf32>
  func.return
}

// -----

func.func @zero_chunks(%m: memref<8x4xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_chunk' op chunks must be >= 1, got 0}}
  %a = hir.alias_chunk %m[%i] axis 0 chunks 0 : memref<8x4xf32> -> memref<8x4xf32>
  func.return
}

// -----

// 3 chunks of 8 rows have 3, 3 and 2 rows: the result's extent is dynamic.
func.func @not_dividing(%m: memref<8x4xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_chunk' op result type must be memref<?x4xf32, strided<[4, 1], offset: ?>>, got memref<2x4xf32, strided<[4, 1], offset: ?>>}}
  %a = hir.alias_chunk %m[%i] axis 0 chunks 3 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
  func.return
}

// -----

func.func @result_type(%m: memref<8x4xf32>, %i: index) {
  // expected-error@+1 {{'hir.alias_chunk' op result type must be memref<2x4xf32, strided<[4, 1], offset: ?>>, got memref<2x4xf32>}}
  %a = hir.alias_chunk %m[%i] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32>
  func.return
}

// -----

func.func @negative_constant_chunk(%m: memref<8x4xf32>) {
  %c = arith.constant -1 : index
  // expected-error@+1 {{'hir.alias_chunk' op chunk index -1 is out of range for 4 chunks}}
  %a = hir.alias_chunk %m[%c] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
  func.return
}

// -----

func.func @constant_chunk_overrun(%m: memref<8x4xf32>) {
  %c = arith.constant 4 : index
  // expected-error@+1 {{'hir.alias_chunk' op chunk index 4 is out of range for 4 chunks}}
  %a = hir.alias_chunk %m[%c] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
  func.return
}
