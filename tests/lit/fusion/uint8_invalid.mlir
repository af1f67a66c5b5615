// RUN: hir-opt %s --split-input-file --verify-diagnostics

// ui8 is the only unsigned element type; its constants lie in 0..255, and an index (which torch
// reads as a mask when it is uint8) is signless.

func.func @full_range() {
  // expected-error@+1 {{'fusion.full' op value 256 is out of range for ui8 ([0, 255])}}
  %0 = fusion.full 256 : tensor<4xui8>
  func.return
}

// -----

func.func @full_negative() {
  // expected-error@+1 {{'fusion.full' op value -1 is out of range for ui8 ([0, 255])}}
  %0 = fusion.full -1 : tensor<4xui8>
  func.return
}

// -----

func.func @gather_index(%x: tensor<4x8xf32>, %i: tensor<4x3xui8>) {
  // expected-error@+1 {{'fusion.gather' op the index must have a signless integer element type (i8 to i64), got ui8}}
  %0 = fusion.gather %x, %i dim = 1 : tensor<4x8xf32>, tensor<4x3xui8> -> tensor<4x3xf32>
  func.return
}

// -----

func.func @other_unsigned(%x: tensor<4xui16>) {
  // expected-error@+1 {{'fusion.neg' op operand #0 has type tensor<4xui16>: element type ui16 is not supported (the runtime runs f16, bf16, f32, f64, i1, i8, i16, i32, i64, ui8)}}
  %0 = fusion.neg %x : tensor<4xui16> -> tensor<4xui16>
  func.return
}
