// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Operand and result types of the stream ops and hir.wait.

func.func @set_current_stream_index(%k: index) {
  // expected-error@+1 {{'hir.set_current_stream' op operand 'stream' at position 0 does not verify:}}
  "hir.set_current_stream"(%k) : (index) -> ()
  func.return
}

// -----

func.func @synchronize_work(%w: !hir.work) {
  // expected-error@+1 {{'hir.synchronize' op operand 'stream' at position 0 does not verify:}}
  "hir.synchronize"(%w) : (!hir.work) -> ()
  func.return
}

// -----

func.func @stream_i64(%k: i64) {
  // expected-error@+1 {{'hir.stream' op operand 'index' at position 0 does not verify:}}
  %s = "hir.stream"(%k) : (i64) -> !hir.stream
  func.return
}

// -----

func.func @wait_stream(%s: !hir.stream) {
  // expected-error@+1 {{'hir.wait' op operand 'work' at position 0 does not verify:}}
  "hir.wait"(%s) : (!hir.stream) -> ()
  func.return
}

// -----

func.func @get_current_stream_type() {
  // expected-error@+1 {{'hir.get_current_stream' op result 'result' at position 0 does not verify:}}
  %s = "hir.get_current_stream"() : () -> index
  func.return
}

// -----

func.func @num_streams_type() {
  // expected-error@+1 {{'hir.num_streams' op result 'result' at position 0 does not verify:}}
  %n = "hir.num_streams"() : () -> i32
  func.return
}

// -----

func.func @send_peer_type(%a: memref<8xf32>, %peer: i64) {
  // expected-error@+1 {{'hir.send' op operand 'peer' at position 1 does not verify:}}
  %w = "hir.send"(%a, %peer) <{mesh = array<i64: 0, 1>}> : (memref<8xf32>, i64) -> !hir.work
  func.return
}
