func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  // expected-error@+1 {{'hir.launch' op yielded value #0 of type tensor<8xf32> does not fit outs #0: memref<4x8xf32>}}
  hir.launch ins(%x = %a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {
    %y = fusion.sum %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  }
  func.return
}
