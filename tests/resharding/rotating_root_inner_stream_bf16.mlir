// A sum to a rotating root whose chunks are not laid out as the output: the stream axis lies
// inside (a strided chunk) and becomes the result's didx axis 1, in bf16. Iteration i sums its
// chunk locally into a contiguous temporary, reduced to device i.
func.func @main(%x: tensor<2x8x2x4xbf16, #fusion.parallel<[didx, serial, stream, serial], mesh = [0, 1]>>)
    -> tensor<8x2x4xbf16, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  %r = fusion.relu %x : tensor<2x8x2x4xbf16, #fusion.parallel<[didx, serial, stream, serial], mesh = [0, 1]>> -> tensor<2x8x2x4xbf16, #fusion.parallel<[didx, serial, stream, serial], mesh = [0, 1]>>
  %c = fusion.sum %r dims = [0] : tensor<2x8x2x4xbf16, #fusion.parallel<[didx, serial, stream, serial], mesh = [0, 1]>> -> tensor<8x2x4xbf16, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %c : tensor<8x2x4xbf16, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}
