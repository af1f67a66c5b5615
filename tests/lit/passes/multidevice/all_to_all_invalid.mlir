// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics

// An all-to-all (the didx axis moves to another axis) is not supported: reported, not guessed.

func.func @axis0_to_axis1(%x: tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower an all-to-all (didx axis 0 -> didx axis 1): scatter and all-to-all are not supported}}
  %y = fusion.set %x : tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}

// -----

// The same inside a stream loop (axis 0 is the stream axis, so the chunk's axes 0 -> 1).
func.func @in_loop(%x: tensor<4x2x2x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>) -> tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower an all-to-all (didx axis 0 -> didx axis 1): scatter and all-to-all are not supported}}
  %y = fusion.set %x : tensor<4x2x2x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> -> tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>>
}
