// expected-error@+1 {{'hir.bogus' is not registered}}
func.func @main(%x: !hir.bogus) {
  func.return
}
