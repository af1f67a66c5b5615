// RUN: hir-run %s | filecheck %s
// RUN: hir-run %s --entry add_in_loop | filecheck %s --check-prefix=CHUNKS

// Host loops run (nvFuser's HostIrTest.ForLoops, HostIrEvaluatorTest.InplaceUpdateInLoop and
// AddInLoop, written by hand at the hir level). The programs make their own data, so hir-run needs
// no inputs and the printed sums are exact.

// A loop from 1 to 7 step 2 (i = 1, 3, 5) whose launch reads and writes the same buffer: the
// accumulator starts at 21 and adds element i of an iota, 21 + 1 + 3 + 5 = 30.

// CHECK: output #0: () torch.float32 sum=30{{$}}
func.func @main() -> memref<f32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %iota = hir.allocate() : memref<8xf32>
  hir.launch ins() outs(%iota : memref<8xf32>) {
    %n = fusion.iota dim = 0 : tensor<8xi64>
    %f = fusion.cast %n : tensor<8xi64> -> tensor<8xf32>
    hir.yield %f : tensor<8xf32>
  }
  %acc = hir.allocate() : memref<f32>
  hir.launch ins() outs(%acc : memref<f32>) {
    %init = fusion.full 2.100000e+01 : tensor<f32>
    hir.yield %init : tensor<f32>
  }
  hir.for %i = %c1 to %c7 step %c2 {
    %v = hir.alias_select %iota[%i] axis 0 : memref<8xf32> -> memref<f32, strided<[], offset: ?>>
    hir.launch ins(%a = %acc, %b = %v : memref<f32>, memref<f32, strided<[], offset: ?>>) outs(%acc : memref<f32>) {
      %sum = fusion.add %a, %b : tensor<f32>, tensor<f32> -> tensor<f32>
      hir.yield %sum : tensor<f32>
    }
  }
  func.return %acc : memref<f32>
}

// A loop over chunks 1 and 2 of 3 (i from 1 to 3), each iteration on a pool stream: chunk i of
// the output is twice chunk i of the input (0, 1, ..., 5); chunk 0 keeps the zeros it was filled
// with: 2 * (2 + 3 + 4 + 5) = 28.

// CHUNKS: output #0: (6,) torch.float32 sum=28{{$}}
func.func @add_in_loop() -> memref<6xf32> {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %main = hir.get_current_stream
  %x = hir.allocate() : memref<6xf32>
  hir.launch ins() outs(%x : memref<6xf32>) {
    %n = fusion.iota dim = 0 : tensor<6xi64>
    %f = fusion.cast %n : tensor<6xi64> -> tensor<6xf32>
    hir.yield %f : tensor<6xf32>
  }
  %y = hir.allocate() : memref<6xf32>
  hir.launch ins() outs(%y : memref<6xf32>) {
    %z = fusion.full 0.000000e+00 : tensor<6xf32>
    hir.yield %z : tensor<6xf32>
  }
  hir.for %i = %c1 to %c3 step %c1 {
    %s = hir.stream %i
    hir.set_current_stream %s
    hir.synchronize %main
    %x_i = hir.alias_chunk %x[%i] axis 0 chunks 3 : memref<6xf32> -> memref<2xf32, strided<[1], offset: ?>>
    %y_i = hir.alias_chunk %y[%i] axis 0 chunks 3 : memref<6xf32> -> memref<2xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i, %b = %x_i : memref<2xf32, strided<[1], offset: ?>>, memref<2xf32, strided<[1], offset: ?>>) outs(%y_i : memref<2xf32, strided<[1], offset: ?>>) {
      %d = fusion.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
      hir.yield %d : tensor<2xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s
  }
  func.return %y : memref<6xf32>
}
