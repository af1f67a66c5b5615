func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  // expected-error@+1 {{%s is used outside the region that defines it (a region's values are not visible outside it, and a loop's boun}}
  hir.stream_for %k = %c0 to %c4 step %c1 streams(%s) of %n from %s {
  }
  func.return
}
