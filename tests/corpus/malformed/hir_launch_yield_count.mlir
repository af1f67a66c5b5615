func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  // expected-error@+1 {{'hir.launch' op hir.yield gives 2 values for 1 outs buffers}}
  hir.launch ins(%x = %a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {
    %y = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y, %y : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.return
}
