func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  // expected-error@+1 {{'hir.alias_chunk' op chunks must be >= 1, got 0}}
  %v = hir.alias_chunk %a[%i] axis 0 chunks 0 : memref<4x8xf32> -> memref<0x8xf32, strided<[8, 1], offset: ?>>
  func.return
}
