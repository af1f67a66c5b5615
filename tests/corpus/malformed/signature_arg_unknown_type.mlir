// expected-error@+1 {{'fusion.nothing' is not registered}}
func.func @main(%x: !fusion.nothing) {
  func.return
}
