// A set from a sharded input to a replicated, stream-parallel result (nvFuser's
// MultiDeviceStreamParallelTypeTest.Allgather): the input's inner axis is sharded over D=2; each
// iteration gathers row i, whose didx axis is then the outermost, with one all-gather of its own.
func.func @main(%x: tensor<4x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>) -> tensor<4x2xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<4x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> -> tensor<4x2xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x2xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
}
