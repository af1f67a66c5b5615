// Accepted: valid at the boundary (no diagnostic expected).
func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  %c1x = arith.constant 1 : index
  %v = hir.alias_chunk %a[%c1x] axis 0 chunks 2 : memref<4x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
  func.return
}
