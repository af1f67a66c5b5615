// RUN: hir-opt %s -p fusion-segment | filecheck %s

// One segment runs under one host loop: either no result in it is stream-parallel, or all are and
// the stream axes correspond through the ops' axis maps with the same chunk count. The predicate
// cannot override this (checked with resharding-only too, which merges whatever it may).

// RUN: hir-opt %s -p 'fusion-segment{policy=resharding-only}' | filecheck %s

// CHECK-LABEL: func.func @same_stream_axis(
func.func @same_stream_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %n = fusion.segment ins(%x_1 = %x : tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT:   %e = fusion.exp %x_1 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT:   %n_1 = fusion.neg %e : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT:   fusion.yield %n_1 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: }
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %n = fusion.neg %e : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %n : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// The permute moves the stream axis from 0 to 1 exactly as its perm moves the data: they correspond.
// CHECK-LABEL: func.func @permuted_stream_axis(
func.func @permuted_stream_axis(%x: tensor<4x8xf32>) -> tensor<8x4xf32, #fusion.parallel<[serial, stream]>> {
  // CHECK-NEXT: %p = fusion.segment ins(%x_1 = %x : tensor<4x8xf32>) -> tensor<8x4xf32, #fusion.parallel<[serial, stream]>> {
  // CHECK-NEXT:   %e = fusion.exp %x_1
  // CHECK-NEXT:   %p_1 = fusion.permute %e perm = [1, 0]
  // CHECK-NEXT:   fusion.yield %p_1
  // CHECK-NEXT: }
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %p = fusion.permute %e perm = [1, 0] : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<8x4xf32, #fusion.parallel<[serial, stream]>>
  func.return %p : tensor<8x4xf32, #fusion.parallel<[serial, stream]>>
}

// Stream axis 0, then stream axis 1 of an elementwise op: two different loops.
// CHECK-LABEL: func.func @different_stream_axes(
func.func @different_stream_axes(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>> {
  // CHECK-NEXT: %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: %n = fusion.neg %e : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  // CHECK-NEXT: func.return %n
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %n = fusion.neg %e : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  func.return %n : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}

// A permute that keeps the stream annotation on axis 0 while moving the data: axis 0 of the
// result is axis 1 of the operand, which is not the operand's stream axis.
// CHECK-LABEL: func.func @permute_breaks_correspondence(
func.func @permute_breaks_correspondence(%x: tensor<4x4xf32>) -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %e = fusion.exp %x
  // CHECK-NEXT: %p = fusion.permute %e perm = [1, 0]
  // CHECK-NEXT: func.return %p
  %e = fusion.exp %x : tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  %p = fusion.permute %e perm = [1, 0] : tensor<4x4xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  func.return %p : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
}

// A stream axis that is a new broadcast axis comes from no operand axis.
// CHECK-LABEL: func.func @broadcast_stream_axis(
func.func @broadcast_stream_axis(%x: tensor<8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %e = fusion.exp %x
  // CHECK-NEXT: %b = fusion.broadcast %e dims = [0]
  // CHECK-NEXT: func.return %b
  %e = fusion.exp %x : tensor<8xf32> -> tensor<8xf32, #fusion.parallel<[stream]>>
  %b = fusion.broadcast %e dims = [0] : tensor<8xf32, #fusion.parallel<[stream]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %b : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// Same axis, different chunk counts (stream(2) vs stream(4), stream(2) vs stream).
// CHECK-LABEL: func.func @different_chunks(
func.func @different_chunks(%x: tensor<8x4xf32>) -> (tensor<8x4xf32, #fusion.parallel<[stream(4), serial]>>, tensor<8x4xf32, #fusion.parallel<[stream, serial]>>) {
  // CHECK-NEXT: %e = fusion.exp %x
  // CHECK-NEXT: %n = fusion.neg %e
  // CHECK-NEXT: %r = fusion.relu %e
  // CHECK-NEXT: func.return %n, %r
  %e = fusion.exp %x : tensor<8x4xf32> -> tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>>
  %n = fusion.neg %e : tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>> -> tensor<8x4xf32, #fusion.parallel<[stream(4), serial]>>
  %r = fusion.relu %e : tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>> -> tensor<8x4xf32, #fusion.parallel<[stream, serial]>>
  func.return %n, %r : tensor<8x4xf32, #fusion.parallel<[stream(4), serial]>>, tensor<8x4xf32, #fusion.parallel<[stream, serial]>>
}

// Same chunk count: one loop.
// CHECK-LABEL: func.func @same_chunks(
func.func @same_chunks(%x: tensor<8x4xf32>) -> tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>> {
  // CHECK-NEXT: %n = fusion.segment ins(%x_1 = %x : tensor<8x4xf32>) -> tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>> {
  // CHECK-NEXT:   %e = fusion.exp %x_1
  // CHECK-NEXT:   %n_1 = fusion.neg %e
  // CHECK-NEXT:   fusion.yield %n_1
  // CHECK-NEXT: }
  %e = fusion.exp %x : tensor<8x4xf32> -> tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>>
  %n = fusion.neg %e : tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>> -> tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %n : tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>>
}

// A stream-parallel result next to a serial one: one would need a loop, the other not.
// CHECK-LABEL: func.func @serial_then_stream(
func.func @serial_then_stream(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: %r = fusion.relu %n : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.relu %n : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// Stream-parallel operands do not matter, only results: these results are all serial.
// CHECK-LABEL: func.func @stream_operand_serial_results(
func.func @stream_operand_serial_results(%x: tensor<4x8xf32, #fusion.parallel<[stream, serial]>>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %n = fusion.segment ins(%x_1 = %x : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>) -> tensor<4x8xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1
  // CHECK-NEXT:   %n_1 = fusion.neg %e
  // CHECK-NEXT:   fusion.yield %n_1
  // CHECK-NEXT: }
  %e = fusion.exp %x : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32>
  %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %n : tensor<4x8xf32>
}

// A batched matmul broadcasts its first operand's extent-1 stream axis into the result's stream
// axis of 4: the two loops would run 1 and 4 iterations, so the relu and the matmul stay apart
// (the loops' iteration spaces differ even though the axis map relates the axes).
// CHECK-LABEL: func.func @broadcast_extent_one_stream_axis(
func.func @broadcast_extent_one_stream_axis(%a: tensor<1x2x3xf32>, %b: tensor<4x3x5xf32>) -> (tensor<1x2x3xf32, #fusion.parallel<[stream, serial, serial]>>, tensor<4x2x5xf32, #fusion.parallel<[stream, serial, serial]>>) {
  // CHECK-NEXT: %p = fusion.relu %a
  // CHECK-NEXT: %q = fusion.matmul %p, %b
  // CHECK-NEXT: func.return %p, %q
  %p = fusion.relu %a : tensor<1x2x3xf32> -> tensor<1x2x3xf32, #fusion.parallel<[stream, serial, serial]>>
  %q = fusion.matmul %p, %b : tensor<1x2x3xf32, #fusion.parallel<[stream, serial, serial]>>, tensor<4x3x5xf32> -> tensor<4x2x5xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %p, %q : tensor<1x2x3xf32, #fusion.parallel<[stream, serial, serial]>>, tensor<4x2x5xf32, #fusion.parallel<[stream, serial, serial]>>
}
