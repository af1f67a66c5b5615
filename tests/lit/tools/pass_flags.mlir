// Every registered pass is also a flag: `--cse --dce` is `-p cse,dce`, and flags are appended
// after -p in command-line order.
// RUN: hir-opt %s --canonicalize --cse --dce | filecheck %s
// RUN: hir-opt %s -p canonicalize,cse,dce | filecheck %s
// RUN: hir-opt %s -p canonicalize --cse --dce | filecheck %s
// RUN: hir-opt %s -p cse --dce --canonicalize --print-between-passes | filecheck %s --check-prefix=ORDER

// CHECK-LABEL: func.func @f(
// CHECK-NEXT:    %0 = fusion.add %a, %a
// CHECK-NEXT:    func.return %0, %0
// CHECK-NEXT:  }

// ORDER:     IR after cse:
// ORDER:     IR after dce:
// ORDER-NOT: IR after canonicalize:
// ORDER:     builtin.module
func.func @f(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = fusion.add %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = fusion.add %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %dead = fusion.exp %a : tensor<4xf32> -> tensor<4xf32>
  func.return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
