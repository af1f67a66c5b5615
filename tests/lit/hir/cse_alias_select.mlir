// RUN: hir-opt %s -p canonicalize,cse,dce | filecheck %s

// hir.alias_select is a pure view: identical selects merge (even across a launch writing the
// buffer: a view does not read it), different ones stay, unused ones disappear.

// CHECK-LABEL: func.func @duplicates(
func.func @duplicates(%m: memref<4x8xf32>, %i: index) {
  // CHECK-NEXT:  %a = hir.alias_select %m[%i] axis 0
  // CHECK-NEXT:  hir.launch ins(%x = %a : {{.*}}) outs(%a : {{.*}})
  // CHECK-NOT:   hir.alias_select
  // CHECK:       hir.launch ins(%x = %a : {{.*}}) outs(%a : {{.*}})
  %a = hir.alias_select %m[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  hir.launch ins(%x = %a : memref<8xf32, strided<[1], offset: ?>>) outs(%a : memref<8xf32, strided<[1], offset: ?>>) {
    %y = fusion.exp %x : tensor<8xf32> -> tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  }
  %b = hir.alias_select %m[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  hir.launch ins(%x = %b : memref<8xf32, strided<[1], offset: ?>>) outs(%b : memref<8xf32, strided<[1], offset: ?>>) {
    %y = fusion.exp %x : tensor<8xf32> -> tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @different(
func.func @different(%m: memref<4x4xf32>, %i: index, %j: index) {
  // CHECK-COUNT-3: hir.alias_select
  // CHECK-NOT:     hir.alias_select
  // CHECK:         func.return
  %a = hir.alias_select %m[%i] axis 0 : memref<4x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
  %b = hir.alias_select %m[%j] axis 0 : memref<4x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
  %c = hir.alias_select %m[%i] axis 1 : memref<4x4xf32> -> memref<4xf32, strided<[4], offset: ?>>
  %wa = hir.send %a to %i mesh = [0, 1] : memref<4xf32, strided<[1], offset: ?>>
  %wb = hir.send %b to %i mesh = [0, 1] : memref<4xf32, strided<[1], offset: ?>>
  hir.launch ins(%x = %c : memref<4xf32, strided<[4], offset: ?>>) outs() {
    hir.yield
  }
  func.return
}

// CHECK-LABEL: func.func @unused(
func.func @unused(%m: memref<4x8xf32>, %i: index) {
  // CHECK-NEXT: func.return
  %a = hir.alias_select %m[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  %b = hir.alias_select %a[%i] axis 0 : memref<8xf32, strided<[1], offset: ?>> -> memref<f32, strided<[], offset: ?>>
  %c = hir.alias_chunk %m[%i] axis 0 chunks 2 : memref<4x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
  func.return
}
