// RUN: hir-opt %s --split-input-file --verify-diagnostics
// RUN: not hir-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=EXIT

// A use before its definition in one block (the parser already rejects uses out of a region's scope;
// passes that move or clone ops are checked by the same dominance verification).
func.func @use_before_def() {
  // expected-error@+1 {{'test.op' op operand #0 (%x) is used before it is defined, or out of its scope}}
  "test.op"(%x) : (index) -> ()
  %x = "test.op"() : () -> index
  func.return
}
// EXIT:     dominance_invalid.mlir:[[# @LINE - 4]]:3: error: 'test.op' op operand #0 (%x) is used before it is defined
// EXIT-NOT: Traceback
