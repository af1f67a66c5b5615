func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  // expected-error@+1 {{'hir.alias_chunk' op chunk index -1 is out of range for 2 chunks}}
  %v = hir.alias_chunk %a[%cm1] axis 0 chunks 2 : memref<4x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
  func.return
}
