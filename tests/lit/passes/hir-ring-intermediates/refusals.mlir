// RUN: hir-opt %s -p hir-ring-intermediates | filecheck %s

// Intermediates that stay whole: every use of a ring's slot must be provably ordered after the
// previous iteration on the same stream, and nothing else may see the buffer. (The programs are
// race-free as they are: the reads across iterations run on one stream, `of %c1`, and the comm
// stream is forked from and joined into the worker.)

// %t is returned: it escapes the loop.
// CHECK-LABEL: func.func @returned(
// CHECK:         %t = hir.allocate() : memref<4x8xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @returned(%x: memref<4x8xf32>) -> (memref<4x8xf32>, memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<4x8xf32>
  %out = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %x_i = hir.alias_select %x[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %t_w = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%t_w : memref<8xf32, strided<[1], offset: ?>>) {
      %r = fusion.relu %a : tensor<8xf32> -> tensor<8xf32>
      hir.yield %r : tensor<8xf32>
    }
    %t_r = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out_i = hir.alias_select %out[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%b = %t_r : memref<8xf32, strided<[1], offset: ?>>) outs(%out_i : memref<8xf32, strided<[1], offset: ?>>) {
      %m = fusion.neg %b : tensor<8xf32> -> tensor<8xf32>
      hir.yield %m : tensor<8xf32>
    }
  }
  func.return %out, %t : memref<4x8xf32>, memref<4x8xf32>
}

// A launch after the loop reads all of %t.
// CHECK-LABEL: func.func @read_after_the_loop(
// CHECK:         %t = hir.allocate() : memref<4x8xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @read_after_the_loop(%x: memref<4x8xf32>) -> (memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<4x8xf32>
  %out = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %x_i = hir.alias_select %x[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %t_w = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%t_w : memref<8xf32, strided<[1], offset: ?>>) {
      %r = fusion.relu %a : tensor<8xf32> -> tensor<8xf32>
      hir.yield %r : tensor<8xf32>
    }
    %t_r = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out_i = hir.alias_select %out[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%b = %t_r : memref<8xf32, strided<[1], offset: ?>>) outs(%out_i : memref<8xf32, strided<[1], offset: ?>>) {
      %m = fusion.neg %b : tensor<8xf32> -> tensor<8xf32>
      hir.yield %m : tensor<8xf32>
    }
  }
  %sum = hir.allocate() : memref<8xf32>
  hir.launch ins(%w = %t : memref<4x8xf32>) outs(%sum : memref<8xf32>) {
    %y = fusion.sum %w dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  }
  func.return %out : memref<4x8xf32>
}

// A second loop reads %t: its slots would be overwritten before it runs.
// CHECK-LABEL: func.func @read_by_another_loop(
// CHECK:         %t = hir.allocate() : memref<4x8xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @read_by_another_loop(%x: memref<4x8xf32>) -> (memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<4x8xf32>
  %out = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %x_i = hir.alias_select %x[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %t_w = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%t_w : memref<8xf32, strided<[1], offset: ?>>) {
      %r = fusion.relu %a : tensor<8xf32> -> tensor<8xf32>
      hir.yield %r : tensor<8xf32>
    }
  }
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %t_r = hir.alias_select %t[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out_i = hir.alias_select %out[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%b = %t_r : memref<8xf32, strided<[1], offset: ?>>) outs(%out_i : memref<8xf32, strided<[1], offset: ?>>) {
      %m = fusion.neg %b : tensor<8xf32> -> tensor<8xf32>
      hir.yield %m : tensor<8xf32>
    }
  }
  func.return %out : memref<4x8xf32>
}

// Iteration i reads all of %t (a reduction across iterations).
// CHECK-LABEL: func.func @whole_buffer_read(
// CHECK:         %t = hir.allocate() : memref<4x8xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @whole_buffer_read(%x: memref<4x8xf32>) -> (memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<4x8xf32>
  %out = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %c1 from %main {
    %x_i = hir.alias_select %x[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %t_w = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%t_w : memref<8xf32, strided<[1], offset: ?>>) {
      %r = fusion.relu %a : tensor<8xf32> -> tensor<8xf32>
      hir.yield %r : tensor<8xf32>
    }
    %out_i = hir.alias_select %out[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%w = %t : memref<4x8xf32>) outs(%out_i : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.sum %w dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %out : memref<4x8xf32>
}

// Iteration i reads row 0 of %t, which iteration 0 wrote.
// CHECK-LABEL: func.func @other_index(
// CHECK:         %t = hir.allocate() : memref<4x8xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @other_index(%x: memref<4x8xf32>) -> (memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<4x8xf32>
  %out = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %c1 from %main {
    %x_i = hir.alias_select %x[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %t_w = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%t_w : memref<8xf32, strided<[1], offset: ?>>) {
      %r = fusion.relu %a : tensor<8xf32> -> tensor<8xf32>
      hir.yield %r : tensor<8xf32>
    }
    %t_r = hir.alias_select %t[%c0] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out_i = hir.alias_select %out[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%b = %t_r : memref<8xf32, strided<[1], offset: ?>>) outs(%out_i : memref<8xf32, strided<[1], offset: ?>>) {
      %m = fusion.neg %b : tensor<8xf32> -> tensor<8xf32>
      hir.yield %m : tensor<8xf32>
    }
  }
  func.return %out : memref<4x8xf32>
}

// Iteration i reads its row of %t before writing it.
// CHECK-LABEL: func.func @read_before_written(
// CHECK:         %t = hir.allocate() : memref<4x8xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @read_before_written(%x: memref<4x8xf32>) -> (memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<4x8xf32>
  %out = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %x_i = hir.alias_select %x[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %t_r = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out_i = hir.alias_select %out[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%b = %t_r : memref<8xf32, strided<[1], offset: ?>>) outs(%out_i : memref<8xf32, strided<[1], offset: ?>>) {
      %m = fusion.neg %b : tensor<8xf32> -> tensor<8xf32>
      hir.yield %m : tensor<8xf32>
    }
    %t_w = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%t_w : memref<8xf32, strided<[1], offset: ?>>) {
      %r = fusion.relu %a : tensor<8xf32> -> tensor<8xf32>
      hir.yield %r : tensor<8xf32>
    }
  }
  func.return %out : memref<4x8xf32>
}

// %t is written on another stream than the iteration's worker.
// CHECK-LABEL: func.func @on_a_comm_stream(
// CHECK:         %t = hir.allocate() : memref<4x8xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @on_a_comm_stream(%x: memref<4x8xf32>) -> (memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<4x8xf32>
  %out = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %k = arith.constant 7 : index
    %comm = hir.stream %k
    hir.set_current_stream %comm
    hir.synchronize %s
    %x_i = hir.alias_select %x[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %t_w = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%t_w : memref<8xf32, strided<[1], offset: ?>>) {
      %r = fusion.relu %a : tensor<8xf32> -> tensor<8xf32>
      hir.yield %r : tensor<8xf32>
    }
    hir.set_current_stream %s
    hir.synchronize %comm
    %t_r = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out_i = hir.alias_select %out[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%b = %t_r : memref<8xf32, strided<[1], offset: ?>>) outs(%out_i : memref<8xf32, strided<[1], offset: ?>>) {
      %m = fusion.neg %b : tensor<8xf32> -> tensor<8xf32>
      hir.yield %m : tensor<8xf32>
    }
  }
  func.return %out : memref<4x8xf32>
}

// Peers map a symmetric buffer: it keeps its shape.
// CHECK-LABEL: func.func @symmetric(
// CHECK:         %t = hir.allocate() symmetric : memref<4x8xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @symmetric(%x: memref<4x8xf32>) -> (memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() symmetric : memref<4x8xf32>
  %out = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %x_i = hir.alias_select %x[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %t_w = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<8xf32, strided<[1], offset: ?>>) outs(%t_w : memref<8xf32, strided<[1], offset: ?>>) {
      %r = fusion.relu %a : tensor<8xf32> -> tensor<8xf32>
      hir.yield %r : tensor<8xf32>
    }
    %t_r = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %out_i = hir.alias_select %out[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%b = %t_r : memref<8xf32, strided<[1], offset: ?>>) outs(%out_i : memref<8xf32, strided<[1], offset: ?>>) {
      %m = fusion.neg %b : tensor<8xf32> -> tensor<8xf32>
      hir.yield %m : tensor<8xf32>
    }
  }
  func.return %out : memref<4x8xf32>
}

// Chunks of a dynamic extent: they may be uneven at run time (ceil(rows/4) rows, the last ones
// fewer), and one slot shape cannot hold them all.
// CHECK-LABEL: func.func @dynamic_chunks(
// CHECK:         %t = hir.allocate(%rows, %cols) : memref<?x?xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @dynamic_chunks(%x: memref<?x?xf32>, %rows: index, %cols: index) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate(%rows, %cols) : memref<?x?xf32>
  %out = hir.allocate(%rows, %cols) : memref<?x?xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %x_i = hir.alias_chunk %x[%i] axis 0 chunks 4 : memref<?x?xf32> -> memref<?x?xf32, strided<[?, 1], offset: ?>>
    %t_i = hir.alias_chunk %t[%i] axis 0 chunks 4 : memref<?x?xf32> -> memref<?x?xf32, strided<[?, 1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<?x?xf32, strided<[?, 1], offset: ?>>) outs(%t_i : memref<?x?xf32, strided<[?, 1], offset: ?>>) {
      %r = fusion.exp %a : tensor<?x?xf32> -> tensor<?x?xf32>
      hir.yield %r : tensor<?x?xf32>
    }
    %out_i = hir.alias_chunk %out[%i] axis 0 chunks 4 : memref<?x?xf32> -> memref<?x?xf32, strided<[?, 1], offset: ?>>
    hir.launch ins(%b = %t_i : memref<?x?xf32, strided<[?, 1], offset: ?>>) outs(%out_i : memref<?x?xf32, strided<[?, 1], offset: ?>>) {
      %m = fusion.tanh %b : tensor<?x?xf32> -> tensor<?x?xf32>
      hir.yield %m : tensor<?x?xf32>
    }
  }
  func.return %out : memref<?x?xf32>
}

// Uneven chunks: 7 rows in 4 chunks are 2, 2, 2 and 1 rows.
// CHECK-LABEL: func.func @uneven_chunks(
// CHECK:         %t = hir.allocate() : memref<7x3xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @uneven_chunks(%x: memref<7x3xf32>) -> memref<7x3xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<7x3xf32>
  %out = hir.allocate() : memref<7x3xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %x_i = hir.alias_chunk %x[%i] axis 0 chunks 4 : memref<7x3xf32> -> memref<?x3xf32, strided<[3, 1], offset: ?>>
    %t_i = hir.alias_chunk %t[%i] axis 0 chunks 4 : memref<7x3xf32> -> memref<?x3xf32, strided<[3, 1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<?x3xf32, strided<[3, 1], offset: ?>>) outs(%t_i : memref<?x3xf32, strided<[3, 1], offset: ?>>) {
      %r = fusion.exp %a : tensor<?x3xf32> -> tensor<?x3xf32>
      hir.yield %r : tensor<?x3xf32>
    }
    %out_i = hir.alias_chunk %out[%i] axis 0 chunks 4 : memref<7x3xf32> -> memref<?x3xf32, strided<[3, 1], offset: ?>>
    hir.launch ins(%b = %t_i : memref<?x3xf32, strided<[3, 1], offset: ?>>) outs(%out_i : memref<?x3xf32, strided<[3, 1], offset: ?>>) {
      %m = fusion.tanh %b : tensor<?x3xf32> -> tensor<?x3xf32>
      hir.yield %m : tensor<?x3xf32>
    }
  }
  func.return %out : memref<7x3xf32>
}
