// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Rules tying a #fusion.parallel encoding to its tensor's shape, checked on every fusion operand and result.

func.func @result_rank_mismatch(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.set' op result: #fusion.parallel lists 1 axes but the tensor has rank 2}}
  %0 = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream]>>
  func.return
}

// -----

func.func @operand_rank_mismatch(%x: tensor<4x8xf32, #fusion.parallel<[serial, stream, serial]>>) {
  // expected-error@+1 {{'fusion.set' op operand #0: #fusion.parallel lists 3 axes but the tensor has rank 2}}
  %0 = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[serial, stream, serial]>> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @didx_extent_not_mesh_size(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.set' op result: didx axis 0 has extent 4 but the mesh has 2 devices (a didx axis holds one index per device: split a longer axis, e.g. 2*k -> 2xk with the 2 sharded; uneven shards are not supported)}}
  %0 = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return
}

// -----

func.func @didx_operand_extent(%x: tensor<4x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2]>>) {
  // expected-error@+1 {{'fusion.neg' op operand #0: didx axis 1 has extent 2 but the mesh has 3 devices}}
  %0 = fusion.neg %x : tensor<4x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2]>> -> tensor<4x2xf32>
  func.return
}

// -----

func.func @foreign_encoding(%x: tensor<4x8xf32, "rows">) {
  // expected-error@+1 {{'fusion.set' op operand #0 has type tensor<4x8xf32, "rows">: encoding "rows" is not #fusion.parallel}}
  %0 = fusion.set %x : tensor<4x8xf32, "rows"> -> tensor<4x8xf32>
  func.return
}
