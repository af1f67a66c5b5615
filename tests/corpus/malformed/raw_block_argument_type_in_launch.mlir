func.func @main(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-error@+1 {{'hir.launch' op region argument #0 of type tensor<8xf32> does not fit ins #0: memref<4xf32> (expected tensor<4}}
  "hir.launch"(%a, %b) <{operandSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: tensor<8xf32>):
    %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  }) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}
