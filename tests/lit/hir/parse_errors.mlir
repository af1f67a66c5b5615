// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Syntax errors in the custom forms of the other hir ops and types.

func.func @alias_select_missing_axis(%m: memref<4x8xf32>, %i: index) {
  // expected-error@+1 {{Expected 'axis'}}
  %v = hir.alias_select %m[%i] 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  func.return
}

// -----

func.func @allocate_missing_parens() {
  // expected-error@+1 {{Expected '('}}
  %b = hir.allocate : memref<4xf32>
  func.return
}

// -----

func.func @for_missing_to(%c: index) {
  // expected-error@+1 {{Expected 'to'}}
  hir.for %i = %c %c step %c {
  }
  func.return
}

// -----

func.func @for_missing_step(%c: index) {
  // expected-error@+1 {{Expected 'step'}}
  hir.for %i = %c to %c {
  }
  func.return
}

// -----

func.func @allgather_missing_mesh(%a: memref<1x8xf32>, %g: memref<2x8xf32>) {
  // expected-error@+1 {{Expected 'mesh'}}
  %w = hir.allgather %a into %g axis 0 : memref<1x8xf32>, memref<2x8xf32>
  func.return
}

// -----

func.func @allreduce_missing_kind(%a: memref<8xf32>) {
  // expected-error@+1 {{identifier expected}}
  %w = hir.allreduce %a into %a mesh = [0, 1] : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

// expected-error@+1 {{'hir.event' is not registered}}
func.func @unknown_type(%e: !hir.event) {
  func.return
}

// -----

func.func @stream_for_without_caller(%c: index) {
  // expected-error@+1 {{Expected 'from'}}
  hir.stream_for %i = %c to %c step %c streams(%s) of %c {
  }
  func.return
}

// -----

// A region's values are not visible outside it: a bound naming the loop's own induction
// variable, or a value defined in the body, is an error at the use.
func.func @for_step_is_its_induction_variable(%c: index) {
  // expected-error@+1 {{%i is used outside the region that defines it}}
  hir.for %i = %c to %c step %i {
  }
  func.return
}

// -----

func.func @stream_for_bound_defined_in_its_body(%c: index, %n: index, %main: !hir.stream) {
  // expected-error@+1 {{%ub is used outside the region that defines it}}
  hir.stream_for %i = %c to %ub step %c streams(%s) of %n from %main {
    %ub = arith.constant 4 : index
  }
  func.return
}

// -----

func.func @launch_input_is_its_block_argument(%b: memref<4xf32>) {
  // expected-error@+1 {{%x is used outside the region that defines it}}
  hir.launch ins(%x = %x : memref<4xf32>) outs(%b : memref<4xf32>) {
    %y = fusion.relu %x : tensor<4xf32> -> tensor<4xf32>
    hir.yield %y : tensor<4xf32>
  }
  func.return
}

// -----

// An attribute or type that refuses its parameters while the op is parsed: located at the op.
func.func @unsigned_constant() {
  // expected-error@+1 {{Expected attribute #builtin.signedness<signless> but got #builtin.signedness<unsigned>}}
  %c3 = arith.constant 3 : ui8
  func.return
}

// -----

func.func @constant_out_of_range() {
  // expected-error@+1 {{Integer value 1 is out of range for type i0}}
  %c1 = arith.constant 1 : i0
  func.return
}

// -----

func.func @float_operands_of_remui(%i: index) {
  // expected-error@+1 {{Unexpected attribute f32}}
  %c = arith.remui %i, %i : f32
  func.return
}

// -----

func.func @list_entry_beyond_i64(%a: tensor<4xf32>) {
  // expected-error@+1 {{Integer value 100000000000000000000 is out of range for type i64}}
  %b = fusion.permute %a perm = [100000000000000000000] : tensor<4xf32> -> tensor<4xf32>
  func.return
}
