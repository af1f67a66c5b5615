// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics

// What passes/resharding still refuses, with the reason, at the op the user wrote.

func.func @all_to_all(%x: tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower an all-to-all (didx axis 0 -> didx axis 1): all-to-all is not supported; gather (set to replicated) and slice (set to the new didx axis) in two sets}}
  %y = fusion.set %x : tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}

// -----

// The same inside a stream loop (axis 0 is the stream axis, so the chunk's axes 0 -> 1).
func.func @all_to_all_in_loop(%x: tensor<4x2x2x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>) -> tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower an all-to-all (didx axis 0 -> didx axis 1)}}
  %y = fusion.set %x : tensor<4x2x2x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> -> tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x2x2x16xf32, #fusion.parallel<[stream, serial, didx, serial], mesh = [0, 1]>>
}

// -----

// A max over the didx axis whose result is sharded on another axis: the gather
// fusion-decompose-resharding inserts is an all-to-all; the error points at the max.
func.func @max_into_other_didx(%x: tensor<2x2x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower an all-to-all (didx axis 0 -> didx axis 1)}}
  %m = fusion.max %x dims = [0] : tensor<2x2x8xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %m : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
