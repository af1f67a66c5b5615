// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.segment: one region argument per operand (same type), fusion ops only, a fusion.yield
// whose types are the results'; fusion.yield only ends a segment.

func.func @arg_count(%a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.segment' op the region takes 0 arguments for 1 operands}}
  "fusion.segment"(%a) ({
    fusion.yield
  }) : (tensor<4xf32>) -> ()
  func.return
}

// -----

func.func @arg_type(%a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.segment' op region argument #0 has type tensor<4xf16>, operand #0 tensor<4xf32>}}
  %r = "fusion.segment"(%a) ({
  ^bb0(%x: tensor<4xf16>):
    %y = fusion.neg %x : tensor<4xf16> -> tensor<4xf16>
    fusion.yield %y : tensor<4xf16>
  }) : (tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----

func.func @yield_types(%a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.segment' op fusion.yield types must equal the segment's result types}}
  %r = fusion.segment ins(%x = %a : tensor<4xf32>) -> tensor<4xf32, #fusion.parallel<[stream]>> {
    fusion.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

func.func @no_yield(%a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.segment' op the region must end with fusion.yield}}
  %r = "fusion.segment"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "test.termop"() : () -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @non_fusion_op(%a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.segment' op a segment holds fusion ops only, found hir.num_streams}}
  %r = fusion.segment ins(%x = %a : tensor<4xf32>) -> tensor<4xf32> {
    %n = hir.num_streams
    fusion.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

func.func @yield_outside(%a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.yield' op 'fusion.yield' expects parent op 'fusion.segment'}}
  fusion.yield %a : tensor<4xf32>
}
