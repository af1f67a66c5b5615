// --time-passes reports each pass, and each stage of a pipeline pass followed by the pipeline's
// total, in xdsl-opt's words, on stderr (as mlir-opt's timing): stdout holds only the IR, so
// `hir-opt --time-passes in.mlir > out.mlir` writes a file that parses. Pass flags and -p mix in
// command-line order.
// RUN: hir-opt %s -p cse --stream-lowering --dce --time-passes 2>%t.timing >%t.mlir
// RUN: filecheck %s --input-file %t.timing
// RUN: hir-opt %t.mlir | filecheck %s --check-prefix=IR

// CHECK:      Pass cse took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass fusion-stream-overlap took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass fusion-decompose-resharding took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass fusion-segment took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass convert-fusion-to-hir took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass hir-loop-fusion took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass hir-lower-communication took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass hir-sink-waits took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass hir-ring-intermediates took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass hir-expand-stream-loops took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass cse took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass stream-lowering took {{[0-9.e-]+}} seconds
// CHECK-NEXT: Pass dce took {{[0-9.e-]+}} seconds
// CHECK-NOT:  builtin.module

// IR: builtin.module
// IR: hir.launch
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %0 = fusion.set %arg0 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %0 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
