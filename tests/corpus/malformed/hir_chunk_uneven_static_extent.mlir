func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  // expected-error@+1 {{'hir.alias_chunk' op result type must be memref<4x?xf32, strided<[8, 1], offset: ?>>, got memref<4x2xf32, strided<[8, 1], offset: ?>>}}
  %v = hir.alias_chunk %a[%i] axis 1 chunks 3 : memref<4x8xf32> -> memref<4x2xf32, strided<[8, 1], offset: ?>>
  func.return
}
