// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.launch: one region tensor per ins buffer and one yielded tensor per outs buffer, each with
// the buffer's shape and element type (or, encoded, a local shape that fits); fusion ops only.

func.func @region_arg_type(%m: memref<8xf32>) {
  // expected-error@+1 {{'hir.launch' op region argument #0 of type tensor<8xf16> does not fit ins #0: memref<8xf32> (expected tensor<8xf32> or an encoded tensor whose local shape fits)}}
  "hir.launch"(%m, %m) <{operandSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: tensor<8xf16>):
    hir.yield %x : tensor<8xf16>
  }) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}

// -----

func.func @region_arg_count(%m: memref<8xf32>) {
  // expected-error@+1 {{'hir.launch' op the region takes 2 arguments for 1 ins buffers}}
  "hir.launch"(%m, %m) <{operandSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: tensor<8xf32>, %y: tensor<8xf32>):
    hir.yield %x : tensor<8xf32>
  }) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}

// -----

func.func @no_yield(%m: memref<8xf32>) {
  // expected-error@+1 {{'hir.launch' op the region must end with hir.yield}}
  "hir.launch"(%m, %m) <{operandSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: tensor<8xf32>):
    "test.termop"() : () -> ()
  }) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}

// -----

func.func @yield_count(%m: memref<8xf32>) {
  // expected-error@+1 {{'hir.launch' op hir.yield gives 0 values for 1 outs buffers}}
  hir.launch ins(%x = %m : memref<8xf32>) outs(%m : memref<8xf32>) {
    hir.yield
  }
  func.return
}

// -----

func.func @yield_too_many(%m: memref<8xf32>) {
  // expected-error@+1 {{'hir.launch' op hir.yield gives 2 values for 1 outs buffers}}
  hir.launch ins(%x = %m : memref<8xf32>) outs(%m : memref<8xf32>) {
    hir.yield %x, %x : tensor<8xf32>, tensor<8xf32>
  }
  func.return
}

// -----

func.func @yield_shape(%m: memref<8xf32>, %n: memref<4xf32>) {
  // expected-error@+1 {{'hir.launch' op yielded value #0 of type tensor<8xf32> does not fit outs #0: memref<4xf32>}}
  hir.launch ins(%x = %m : memref<8xf32>) outs(%n : memref<4xf32>) {
    hir.yield %x : tensor<8xf32>
  }
  func.return
}

// -----

func.func @yield_element_type(%m: memref<8xf32>, %n: memref<8xf16>) {
  // expected-error@+1 {{'hir.launch' op yielded value #0 of type tensor<8xf32> does not fit outs #0: memref<8xf16>}}
  hir.launch ins(%x = %m : memref<8xf32>) outs(%n : memref<8xf16>) {
    hir.yield %x : tensor<8xf32>
  }
  func.return
}

// -----

func.func @non_fusion_op(%m: memref<8xf32>, %n: memref<8xf32>) {
  // expected-error@+1 {{'hir.launch' op a launch region holds fusion ops only, found test.op}}
  hir.launch ins(%x = %m : memref<8xf32>) outs(%n : memref<8xf32>) {
    %c = "test.op"() : () -> index
    hir.yield %x : tensor<8xf32>
  }
  func.return
}

// -----

func.func @nested_hir_op(%m: memref<8xf32>, %n: memref<8xf32>) {
  // expected-error@+1 {{'hir.launch' op a launch region holds fusion ops only, found hir.num_streams}}
  hir.launch ins(%x = %m : memref<8xf32>) outs(%n : memref<8xf32>) {
    %k = hir.num_streams
    hir.yield %x : tensor<8xf32>
  }
  func.return
}

// -----

func.func @isolated(%m: memref<8xf32>, %t: tensor<8xf32>) {
  // expected-error@+1 {{'hir.launch' op Operation using value defined out of its IsolatedFromAbove parent: AddOp(%y = fusion.add %x, %t}}
  hir.launch ins(%x = %m : memref<8xf32>) outs(%m : memref<8xf32>) {
    %y = fusion.add %x, %t : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  }
  func.return
}

// -----

func.func @fusion_error_inside(%m: memref<8xf32>) {
  hir.launch ins(%x = %m : memref<8xf32>) outs(%m : memref<8xf32>) {
    // An invalid fusion op in a region is reported at its own location.
    // expected-error@+1 {{'fusion.exp' op result shape 4 does not match the expected shape 8}}
    %y = fusion.exp %x : tensor<8xf32> -> tensor<4xf32>
    hir.yield %x : tensor<8xf32>
  }
  func.return
}

// -----

func.func @encoded_arg_local_shape(%m: memref<2x8xf32>) {
  // The didx axis of the global tensor is 1 on each device: 2x8 global is 1x8 local, not 2x8.
  // expected-error@+1 {{'hir.launch' op region argument #0 of type tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> does not fit ins #0: memref<2x8xf32>}}
  hir.launch ins(%x = %m : memref<2x8xf32> as tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) outs() {
    hir.yield
  }
  func.return
}

// -----

func.func @encoded_yield_local_shape(%m: memref<2x8xf32>, %n: memref<2x8xf32>) {
  // expected-error@+1 {{'hir.launch' op yielded value #0 of type tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> does not fit outs #0: memref<2x8xf32>}}
  hir.launch ins(%x = %m : memref<2x8xf32>) outs(%n : memref<2x8xf32>) {
    %y = fusion.set %x : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
    hir.yield %y : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  }
  func.return
}
