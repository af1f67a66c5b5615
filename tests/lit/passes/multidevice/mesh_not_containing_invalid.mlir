// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics

// Copying to another mesh is a broadcast only when the data is replicated and the destination
// mesh contains the source mesh (the root is the source's first device); anything else (gather to
// a subset, point-to-point between disjoint meshes) is reported.

func.func @to_subset(%x: tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower a copy from mesh [0, 1] to [1]: only replicated data moving to a mesh that contains its own is supported (broadcast)}}
  %y = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
}

// -----

func.func @disjoint(%x: tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower a copy from mesh [0, 1] to [2, 3]: only replicated data moving to a mesh that contains its own is supported (broadcast)}}
  %y = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>
}

// -----

// Sharded data moving to another mesh along the same axis (send/recv pairs) is not supported either.
func.func @sharded_to_other_mesh(%x: tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower a copy from mesh [0, 1] to [2, 3]: only replicated data moving to a mesh that contains its own is supported (broadcast)}}
  %y = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>
}
