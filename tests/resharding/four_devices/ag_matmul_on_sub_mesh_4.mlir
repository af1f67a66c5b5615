// An all-gather + matmul pipeline on a sub-mesh of a 4-process job (devices 0 and 1 outside it).
// With backend=copy-engine its hir.barrier over [2, 3] once fell back to a barrier of the whole
// job that the devices outside the mesh skip (a hang), and the race checker required the
// symmetric buffer's accesses to be ordered before the exit of devices that never touch it.
func.func @main(%a: tensor<2x2x2xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 3]>>, %b: tensor<2xf32, #fusion.parallel<[serial], mesh = [2, 3]>>) -> tensor<2x2xf32, #fusion.parallel<[stream, serial], mesh = [2, 3]>> {
  %c = fusion.matmul %a, %b : tensor<2x2x2xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 3]>>, tensor<2xf32, #fusion.parallel<[serial], mesh = [2, 3]>> -> tensor<2x2xf32, #fusion.parallel<[stream, serial], mesh = [2, 3]>>
  func.return %c : tensor<2x2xf32, #fusion.parallel<[stream, serial], mesh = [2, 3]>>
}
