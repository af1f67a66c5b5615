// A sum over the sharded axis whose result is sharded on another axis and stream-parallel
// (nvFuser's MultiDeviceStreamParallelTypeTest.ReduceScatter): per row i, a reduce-scatter of the
// device's partial into its part of row i.
func.func @main(%x: tensor<4x2x2x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>) -> tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [1] : tensor<4x2x2x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> -> tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
}
