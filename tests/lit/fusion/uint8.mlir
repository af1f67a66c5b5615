// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// ui8 (torch.uint8) is an element type of its own: MLIR's unsigned 8-bit integer, whose
// arithmetic wraps modulo 256 and whose constants range over 0..255.

// CHECK-LABEL: func.func @image(
func.func @image(%x: tensor<2x3xui8>, %y: tensor<2x3xui8>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xui8>) {
  // CHECK-NEXT: %c = fusion.full 128 : tensor<ui8>
  %c = fusion.full 128 : tensor<ui8>
  // CHECK-NEXT: %b = fusion.broadcast %c dims = [0, 1] : tensor<ui8> -> tensor<2x3xui8>
  %b = fusion.broadcast %c dims = [0, 1] : tensor<ui8> -> tensor<2x3xui8>
  // CHECK-NEXT: %f = fusion.cast %x : tensor<2x3xui8> -> tensor<2x3xf32>
  %f = fusion.cast %x : tensor<2x3xui8> -> tensor<2x3xf32>
  // CHECK-NEXT: %m = fusion.compare lt, %x, %b : tensor<2x3xui8>, tensor<2x3xui8> -> tensor<2x3xi1>
  %m = fusion.compare lt, %x, %b : tensor<2x3xui8>, tensor<2x3xui8> -> tensor<2x3xi1>
  // CHECK-NEXT: %s = fusion.add %x, %y : tensor<2x3xui8>, tensor<2x3xui8> -> tensor<2x3xui8, #fusion.parallel<[stream, serial]>>
  %s = fusion.add %x, %y : tensor<2x3xui8>, tensor<2x3xui8> -> tensor<2x3xui8, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: %u = fusion.cast %s : tensor<2x3xui8, #fusion.parallel<[stream, serial]>> -> tensor<2x3xui8>
  %u = fusion.cast %s : tensor<2x3xui8, #fusion.parallel<[stream, serial]>> -> tensor<2x3xui8>
  // CHECK-NEXT: func.return %f, %m, %u : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xui8>
  func.return %f, %m, %u : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xui8>
}
