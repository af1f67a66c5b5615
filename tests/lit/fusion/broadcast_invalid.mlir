// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.broadcast: `dims` name distinct result axes, the other result axes are the operand's.

func.func @shape_mismatch(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.broadcast' op broadcast of 4x8 with new dims [0] cannot produce 3x4x7}}
  %0 = fusion.broadcast %x dims = [0] : tensor<4x8xf32> -> tensor<3x4x7xf32>
  func.return
}

// -----

func.func @rank_mismatch(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.broadcast' op broadcast of 4x8 with new dims [0] cannot produce 2x3x4x8}}
  %0 = fusion.broadcast %x dims = [0] : tensor<4x8xf32> -> tensor<2x3x4x8xf32>
  func.return
}

// -----

func.func @dim_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.broadcast' op broadcast dims entry 3 is out of range for rank 3}}
  %0 = fusion.broadcast %x dims = [3] : tensor<4x8xf32> -> tensor<4x8x2xf32>
  func.return
}

// -----

func.func @duplicate_dims(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.broadcast' op broadcast dims [1, 1] has duplicates}}
  %0 = fusion.broadcast %x dims = [1, 1] : tensor<4xf32> -> tensor<4x2x2xf32>
  func.return
}

// -----

func.func @element_type(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.broadcast' op operand #0 has element type f32, the result bf16}}
  %0 = fusion.broadcast %x dims = [0] : tensor<4xf32> -> tensor<2x4xbf16>
  func.return
}
