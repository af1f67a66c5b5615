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

// A didx axis of any extent L >= 1 is sharded in chunks of ceil(L/D) (encoding_didx.mlir); an empty one is not.
func.func @didx_extent_zero(%x: tensor<0x8xf32>) {
  // expected-error@+1 {{'fusion.set' op result: didx axis 0 has extent 0: a sharded axis needs at least one index (its 2 devices hold chunks of ceil(extent/devices) indices)}}
  %0 = fusion.set %x : tensor<0x8xf32> -> tensor<0x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return
}

// -----

func.func @didx_operand_extent_zero(%x: tensor<4x0xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2]>>) {
  // expected-error@+1 {{'fusion.neg' op operand #0: didx axis 1 has extent 0: a sharded axis needs at least one index}}
  %0 = fusion.neg %x : tensor<4x0xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2]>> -> tensor<4x0xf32>
  func.return
}

// -----

func.func @foreign_encoding(%x: tensor<4x8xf32, "rows">) {
  // expected-error@+1 {{'fusion.set' op operand #0 has type tensor<4x8xf32, "rows">: encoding "rows" is not #fusion.parallel}}
  %0 = fusion.set %x : tensor<4x8xf32, "rows"> -> tensor<4x8xf32>
  func.return
}
