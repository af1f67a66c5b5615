// bf16: a matmul whose M (7 rows over 2 devices: 4 and 3) is sharded computes on the shards,
// then the all-gather of the product (padded to 4 rows each).
func.func @main(%a: tensor<7x16xbf16, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %b: tensor<16x8xbf16>) -> tensor<7x8xbf16, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %c = fusion.matmul %a, %b : tensor<7x16xbf16, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<16x8xbf16> -> tensor<7x8xbf16, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %g = fusion.set %c : tensor<7x8xbf16, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<7x8xbf16, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %g : tensor<7x8xbf16, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}
