// expected-error@+1 {{mesh device ids must be at most 2^63 - 1, got [0, 99999999999999999999]}}
func.func @main(%x: tensor<2xf32, #fusion.parallel<[didx], mesh = [0, 99999999999999999999]>>) {
  func.return
}
