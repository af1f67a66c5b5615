// `-o FILE` writes the result there and nothing to stdout.
// RUN: hir-opt %s -o %t.out.mlir > %t.stdout
// RUN: echo END >> %t.stdout
// RUN: filecheck %s --input-file %t.out.mlir
// RUN: filecheck %s --input-file %t.stdout --check-prefix=STDOUT
// `-o -` is stdout.
// RUN: hir-opt %s -o - | filecheck %s
// The output file parses back.
// RUN: hir-opt %t.out.mlir -o %t.again.mlir
// RUN: diff %t.out.mlir %t.again.mlir

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:     %r = fusion.relu %a : tensor<4xf32> -> tensor<4xf32>

// STDOUT-NOT: builtin.module
// STDOUT:     END
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = fusion.relu %a : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
