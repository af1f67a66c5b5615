// RUN: hir-opt %s -p 'fusion-segment{policy=fastest}' --verify-diagnostics
// RUN: not hir-opt %s -p 'fusion-segment{policy=fastest}' 2>&1 | filecheck %s

// An unknown policy is an error that names the allowed ones; it has no location in the input.

// expected-error@unknown {{fusion-segment: unknown policy 'fastest', expected one of: standalone-host-ops, resharding-only}}
// CHECK:     hir-opt: error: fusion-segment: unknown policy 'fastest', expected one of: standalone-host-ops, resharding-only
// CHECK-NOT: Traceback

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = fusion.exp %x : tensor<4xf32> -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}
