// RUN: not hir-opt %s -p 'fusion-propagate-sharding{traversal=sideways}' 2>&1 | filecheck %s
// RUN: not hir-opt %s -p 'stream-lowering{propagate-sharding=yes}' 2>&1 | filecheck %s --check-prefix=BOOL

// A bad option is an error of the pipeline, reported when the pass is built (before the input is
// read), on one line that names what is allowed. Conflicting shardings are no error: the pass
// picks one (rules.mlir, traversal.mlir).

// CHECK:     hir-opt: error: invalid options for pass 'fusion-propagate-sharding': traversal must be one of forward, backward, forward-backward, backward-forward, got 'sideways'
// CHECK-NOT: Traceback
// BOOL:      hir-opt: error: option 'propagate-sharding' of pass 'stream-lowering' expects bool, got 'yes'
// BOOL-NOT:  Traceback

func.func @f(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x8xf32> {
  %e = fusion.exp %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  func.return %e : tensor<2x8xf32>
}
