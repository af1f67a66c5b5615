func.func @main(%c: index) {
  "hir.for"(%c, %c, %k) ({
  ^bb0(%k: index):
    hir.yield
  }) : (index, index, index) -> ()
  func.return
}
// expected-error@+1 {{values used but not defined: [%k]}}
