// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Rules of #fusion.parallel itself, reported at the attribute while parsing.

// expected-error@+1 {{unknown parallel type 'foo', expected one of serial, stream, didx}}
func.func @unknown_kind(%x: tensor<4x8xf32, #fusion.parallel<[foo, serial]>>) {
  func.return
}

// -----

// expected-error@+1 {{at most one stream axis per tensor, found 2}}
func.func @two_stream_axes(%x: tensor<4x8xf32, #fusion.parallel<[stream, stream(2)]>>) {
  func.return
}

// -----

// expected-error@+1 {{at most one didx axis per tensor, found 2}}
func.func @two_didx_axes(%x: tensor<2x2xf32, #fusion.parallel<[didx, didx], mesh = [0, 1]>>) {
  func.return
}

// -----

// expected-error@+1 {{a didx axis needs a mesh: add `mesh = [ids]`}}
func.func @didx_without_mesh(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial]>>) {
  func.return
}

// -----

// expected-error@+1 {{mesh device ids must be distinct and non-negative, got [0, 0]}}
func.func @duplicate_mesh_ids(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 0]>>) {
  func.return
}

// -----

// expected-error@+1 {{mesh device ids must be distinct and non-negative, got [-1, 0]}}
func.func @negative_mesh_id(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [-1, 0]>>) {
  func.return
}

// -----

// expected-error@+1 {{stream(N) needs N >= 1}}
func.func @zero_chunks(%x: tensor<4x8xf32, #fusion.parallel<[stream(0), serial]>>) {
  func.return
}

// -----

// Only a stream axis takes a chunk count.
// expected-error@+1 {{']' expected}}
func.func @serial_chunks(%x: tensor<4x8xf32, #fusion.parallel<[serial(2), serial]>>) {
  func.return
}

// -----

// expected-error@+1 {{Expected '='}}
func.func @mesh_without_equals(%x: tensor<2xf32, #fusion.parallel<[didx], mesh [0, 1]>>) {
  func.return
}
