func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  %f = arith.constant 4 : i32
  // expected-error@+1 {{operand is used with type index, but has been previously used or defined with type i32}}
  hir.for %k = %c0 to %f step %c1 {
  }
  func.return
}
