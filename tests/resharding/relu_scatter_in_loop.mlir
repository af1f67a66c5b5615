// A computing op whose result is sharded on an inner axis and streamed on axis 0: the operand's
// slice of each chunk is taken locally, then the relu runs on it.
func.func @main(%x: tensor<4x2x8xf32>) -> tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>> {
  %y = fusion.relu %x : tensor<4x2x8xf32> -> tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
}
