// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Syntax errors in `hir.launch ins(%arg = %buf, .. : types) outs(%buf, .. : types) [attributes {..}] {region}`.

func.func @missing_ins(%m: memref<8xf32>) {
  // expected-error@+1 {{Expected 'ins'}}
  hir.launch outs(%m : memref<8xf32>) {
    hir.yield
  }
  func.return
}

// -----

func.func @missing_outs(%m: memref<8xf32>) {
  // expected-error@+1 {{Expected 'outs'}}
  hir.launch ins(%x = %m : memref<8xf32>) {
    hir.yield
  }
  func.return
}

// -----

func.func @ins_without_binding(%m: memref<8xf32>) {
  // expected-error@+1 {{Expected '='}}
  hir.launch ins(%m : memref<8xf32>) outs() {
    hir.yield
  }
  func.return
}

// -----

func.func @ins_without_types(%m: memref<8xf32>) {
  // expected-error@+1 {{Expected ':'}}
  hir.launch ins(%x = %m) outs() {
    hir.yield
  }
  func.return
}

// -----

func.func @outs_without_types(%m: memref<8xf32>) {
  // expected-error@+1 {{Expected ':'}}
  hir.launch ins() outs(%m) {
    hir.yield
  }
  func.return
}

// -----

func.func @ins_not_memref(%t: tensor<8xf32>) {
  // expected-error@+1 {{ins buffers must be memrefs, got tensor<8xf32>}}
  hir.launch ins(%x = %t : tensor<8xf32>) outs() {
    hir.yield
  }
  func.return
}

// -----

func.func @type_count(%m: memref<8xf32>) {
  // expected-error@+1 {{expected 2 operand types but had 1}}
  hir.launch ins(%x = %m : memref<8xf32>, memref<8xf32>) outs() {
    hir.yield
  }
  func.return
}

// -----

func.func @missing_region(%m: memref<8xf32>) {
  // expected-error@+2 {{Expected region!}}
  hir.launch ins() outs()
  func.return
}
