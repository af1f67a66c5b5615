// Accepted: valid at the boundary (no diagnostic expected).
func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  hir.for %k = %c4 to %c0 step %c1 {
  }
  func.return
}
