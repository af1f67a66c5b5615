// --verify-diagnostics checks every diagnostic against `expected-*` annotations, as mlir-opt does:
// all of them match here, so the exit status is 0, nothing goes to stderr, and the chunks without
// errors still print. Each chunk of --split-input-file keeps the file's line numbers.
// RUN: hir-opt %s --split-input-file --verify-diagnostics 2> %t.stderr | filecheck %s
// RUN: filecheck %s --input-file %t.stderr --check-prefix=STDERR --allow-empty

// STDERR-NOT: {{.}}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @valid() {
// CHECK:      // {{-+}}
func.func @valid() {
  func.return
}

// -----

// `@+N`: N lines below; the text is a substring of the message.
func.func @below(%a: tensor<4xf32>) {
  // expected-error@+1 {{result shape 5 does not match the expected shape 4}}
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// -----

// No suffix: this line. The whole message, with the op's name, also matches.
func.func @same_line(%a: tensor<4xf32>) {
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32> // expected-error {{'fusion.neg' op result shape 5 does not match the expected shape 4}}
  func.return
}

// -----

// `@-N`: N lines above.
func.func @above_by_count(%a: tensor<4xf32>) {
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  // expected-error@-1 {{result shape 5}}
  func.return
}

// -----

// `@below` / `@above`: the nearest line, down or up, that is not an annotation.
func.func @below_and_above(%m: memref<4xf32>, %i: index) {
  // expected-error@below {{axis 1 is out of range}}
  %v = hir.alias_select %m[%i] axis 1 : memref<4xf32> -> memref<f32, strided<[], offset: ?>>
  func.return
}

// -----

func.func @above(%m: memref<4xf32>, %i: index) {
  %v = hir.alias_select %m[%i] axis 1 : memref<4xf32> -> memref<f32, strided<[], offset: ?>>
  // expected-error@above {{'hir.alias_select' op axis 1 is out of range}}
  func.return
}

// -----

// `expected-error-re`: the parts in {{...}} are regular expressions.
func.func @regex(%a: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error-re@+1 {{operands must have the same shape, got {{[0-9]+}} and {{[0-9]+}}}}
  %0 = fusion.add %a, %b : tensor<4xf32>, tensor<8xf32> -> tensor<4xf32>
  func.return
}

// -----

// Parse errors are diagnostics too, located at the offending token.
func.func @parse_error(%c: index) {
  // expected-error@+1 {{Expected 'to'}}
  hir.for %i = %c at %c step %c {
  }
  func.return
}

// -----

// Notes: here the parser's second position of an error.
func.func @notes() {
// expected-note@below {{originally declared here}}
^bb0:
  func.return
^bb0: // expected-error {{re-declaration of block 'bb0'}}
  func.return
}

// -----

// The chunks that failed print nothing.
// CHECK-NOT:  {{fusion|hir}}.
// CHECK:      func.func @valid_again() {
func.func @valid_again() {
  func.return
}
