// --time-passes reports each pass, and each stage of a pipeline pass followed by the pipeline's
// total, in xdsl-opt's words; pass flags and -p mix in command-line order.
// RUN: hir-opt %s -p cse --stream-lowering --dce --time-passes | filecheck %s

// CHECK:      Pass cse took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass fusion-stream-overlap took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass fusion-decompose-resharding took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass fusion-segment took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass convert-fusion-to-hir took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass hir-loop-fusion took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass hir-lower-communication took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass hir-ring-intermediates took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass hir-expand-stream-loops took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass cse took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass stream-lowering took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass dce took {{[0-9.e-]+}} seconds
// CHECK-NEXT: builtin.module
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %0 = fusion.set %arg0 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %0 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
