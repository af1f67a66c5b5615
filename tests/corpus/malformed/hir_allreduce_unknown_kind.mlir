func.func @main(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %n: index, %main: !hir.stream) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  // expected-error@+1 {{identifier expected}}
  %w = hir.allreduce %a, %b kind prod mesh [0, 1] : memref<4x8xf32>, memref<4x8xf32> -> !hir.work
  func.return
}
