// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.deallocate: no op after it uses the buffer, in its block or in the blocks around it up to
// the buffer's definition (a use after the release would read freed memory, or, returned, hand the
// caller a buffer that no longer exists).

func.func @returned(%a: memref<4x8xf32>) -> memref<4x8xf32> {
  %buf = hir.allocate() : memref<4x8xf32>
  // expected-error@+1 {{'hir.deallocate' op %buf is used after it is deallocated, by 'func.return' at}}
  hir.deallocate %buf : memref<4x8xf32>
  func.return %buf : memref<4x8xf32>
}

// -----

func.func @twice() {
  %buf = hir.allocate() : memref<4x8xf32>
  // expected-error@+1 {{'hir.deallocate' op %buf is used after it is deallocated, by 'hir.deallocate' at}}
  hir.deallocate %buf : memref<4x8xf32>
  hir.deallocate %buf : memref<4x8xf32>
  func.return
}

// -----

func.func @launch_reads_an_input_released_before(%a: memref<4x8xf32>) {
  %buf = hir.allocate() : memref<4x8xf32>
  // expected-error@+1 {{'hir.deallocate' op %a is used after it is deallocated, by 'hir.launch' at}}
  hir.deallocate %a : memref<4x8xf32>
  hir.launch ins(%x = %a : memref<4x8xf32>) outs(%buf : memref<4x8xf32>) {
    %y = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y : tensor<4x8xf32>
  }
  func.return
}

// -----

func.func @view_taken_inside_a_later_loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %buf = hir.allocate() : memref<4x8xf32>
  // expected-error@+1 {{'hir.deallocate' op %buf is used after it is deallocated, by 'hir.alias_select' at}}
  hir.deallocate %buf : memref<4x8xf32>
  hir.for %i = %c0 to %n step %c1 {
    %row = hir.alias_select %buf[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  }
  func.return
}

// -----

func.func @released_in_a_loop_then_returned(%n: index) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %buf = hir.allocate() : memref<4x8xf32>
  hir.for %i = %c0 to %n step %c1 {
    // expected-error@+1 {{'hir.deallocate' op %buf is used after it is deallocated, by 'func.return' at}}
    hir.deallocate %buf : memref<4x8xf32>
  }
  func.return %buf : memref<4x8xf32>
}
