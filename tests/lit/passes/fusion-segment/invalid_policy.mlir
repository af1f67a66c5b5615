// RUN: not hir-opt %s -p 'fusion-segment{policy=fastest}' 2>&1 | filecheck %s
// RUN: not hir-opt %s -p 'stream-lowering{policy=fastest}' 2>&1 | filecheck %s --check-prefix=PIPELINE

// An unknown policy is an error of the pipeline, reported when the pass is built (before the input
// is read, as for any bad option), that names the allowed ones.

// CHECK:     hir-opt: error: invalid options for pass 'fusion-segment': unknown policy 'fastest', expected one of: standalone-host-ops, resharding-only
// CHECK-NOT: Traceback
// PIPELINE:  hir-opt: error: invalid options for pass 'stream-lowering': unknown policy 'fastest', expected one of: standalone-host-ops, resharding-only

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = fusion.exp %x : tensor<4xf32> -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}
