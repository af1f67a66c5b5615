// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.device_index: this device's position in a mesh, an index.

// CHECK-LABEL: func.func @device_index(
func.func @device_index() -> (index, index) {
  // CHECK-NEXT: %r = hir.device_index mesh = [0, 1]
  %r = hir.device_index mesh = [0, 1]
  // CHECK-NEXT: %s = hir.device_index mesh = [3] {tag}
  %s = hir.device_index mesh = [3] {tag}
  // CHECK-NEXT: func.return %r, %s : index, index
  func.return %r, %s : index, index
}
