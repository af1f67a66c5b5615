// RUN: hir-opt %s -p 'fusion-segment{policy=contractions-with-epilogues}' | filecheck %s
// RUN: hir-opt %s -p 'fusion-segment{policy=contractions-standalone}' | filecheck %s --check-prefix=PLAIN

// policy=contractions-with-epilogues: GEMMs stay single, except that a residual add of a GEMM's
// result joins the GEMM's launch (one addmm); everything else between two GEMMs is one launch.
// The add joins its GEMM before the norm after it can take it (contractions-standalone puts the
// add with the norm, and the GEMM writes a buffer of its own).

// CHECK-LABEL: func.func @residual_then_norm(
// CHECK-NEXT:    %h = fusion.segment ins(%a_1 = %a, %wo_1 = %wo, %x_1 = %x : {{.*}}) -> tensor<8x16xf32> {
// CHECK-NEXT:      %y = fusion.linear %a_1, %wo_1
// CHECK-NEXT:      %h_1 = fusion.add %x_1, %y
// CHECK-NEXT:      fusion.yield %h_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %g = fusion.segment ins(%h_1 = %h, %nw_1 = %nw : {{.*}}) -> tensor<8x16xf32> {
// CHECK-NEXT:      %n = fusion.rms_norm %h_1, %nw_1
// CHECK-NEXT:      %g_1 = fusion.silu %n
// CHECK-NEXT:      fusion.yield %g_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %z = fusion.linear %g, %w2
// CHECK-NEXT:    func.return %h, %z

// PLAIN-LABEL: func.func @residual_then_norm(
// PLAIN-NEXT:    %y = fusion.linear %a, %wo
// PLAIN-NEXT:    %h, %g = fusion.segment
// PLAIN-NEXT:      %h_1 = fusion.add
// PLAIN-NEXT:      %n = fusion.rms_norm
// PLAIN-NEXT:      %g_1 = fusion.silu
func.func @residual_then_norm(%x: tensor<8x16xf32>, %a: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %nw: tensor<16xf32>, %w2: tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %y = fusion.linear %a, %wo : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %h = fusion.add %x, %y : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %n = fusion.rms_norm %h, %nw dims = [1] eps = 1.0e-05 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %g = fusion.silu %n : tensor<8x16xf32> -> tensor<8x16xf32>
  %z = fusion.linear %g, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  func.return %h, %z : tensor<8x16xf32>, tensor<8x16xf32>
}

// A GEMM with a bias (no addmm epilogue) leaves its add to the elementwise chain after it.

// CHECK-LABEL: func.func @biased(
// CHECK-NEXT:    %y = fusion.linear %a, %w, %b
// CHECK-NEXT:    %g = fusion.segment
// CHECK-NEXT:      %h = fusion.add %x_1, %y_1
// CHECK-NEXT:      %g_1 = fusion.tanh %h
func.func @biased(%x: tensor<8x16xf32>, %a: tensor<8x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %y = fusion.linear %a, %w, %b : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %h = fusion.add %x, %y : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %g = fusion.tanh %h : tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %g : tensor<8x16xf32>
}

// A bf16 or f16 residual add stays out of its GEMM's launch: one rounding of the sum would differ
// from eager's two by an ulp of the half type. It fuses with what follows instead.

// CHECK-LABEL: func.func @half_precision(
// CHECK-NEXT:    %y = fusion.linear %a, %w
// CHECK-NEXT:    %g = fusion.segment
// CHECK-NEXT:      %h = fusion.add %x_1, %y_1
// CHECK-NEXT:      %g_1 = fusion.tanh %h
func.func @half_precision(%x: tensor<8x16xbf16>, %a: tensor<8x16xbf16>, %w: tensor<16x16xbf16>) -> tensor<8x16xbf16> {
  %y = fusion.linear %a, %w : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
  %h = fusion.add %x, %y : tensor<8x16xbf16>, tensor<8x16xbf16> -> tensor<8x16xbf16>
  %g = fusion.tanh %h : tensor<8x16xbf16> -> tensor<8x16xbf16>
  func.return %g : tensor<8x16xbf16>
}
