func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  // expected-error@+1 {{%x is used outside the region that defines it (a region's values are not visible outside it, and a loop's boun}}
  hir.launch ins(%x = %x : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {
    %y = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y : tensor<4x8xf32>
  }
  func.return
}
