// RUN: not hir-run %s 2>&1 | filecheck %s
// A collective whose work no hir.wait completes: hir-run refuses the program before it runs, at
// the op (on two ranks the returned buffer was the unreduced input, without an error).

// CHECK: hir_run_unwaited_communication.mlir:[[# @LINE + 3]]:3: error: 'hir.allreduce' op the work of this hir.allreduce is never waited for: add `hir.wait` on it before its buffers are read
// CHECK-NOT: Traceback
func.func @main(%x: memref<4xf32> {fusion.type = tensor<4xf32, #fusion.parallel<[serial], mesh = [0]>>}) -> (memref<4xf32> {fusion.type = tensor<4xf32, #fusion.parallel<[serial], mesh = [0]>>}) {
  %0 = hir.allreduce sum %x into %x mesh = [0] : memref<4xf32>, memref<4xf32>
  func.return %x : memref<4xf32>
}
