// RUN: hir-opt %s -p fusion-segment,convert-fusion-to-hir --verify-diagnostics
// RUN: hir-opt %s -p fusion-decompose-resharding,fusion-segment,convert-fusion-to-hir | filecheck %s --check-prefix=DECOMPOSED

// A computing op whose operands are sharded differently from its result cannot become a launch:
// without fusion-decompose-resharding (part of --stream-lowering) convert-fusion-to-hir reports
// it; after it, the all-gather is a resharding launch of its own (the region sees the global,
// encoded chunk) and the matmul a plain launch.

func.func @ag_matmul(%a: tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<16x32xf32>) -> tensor<4x2x8x32xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  // expected-error@+1 {{'fusion.matmul' op computes on operands sharded differently from its result: run fusion-decompose-resharding first (part of --stream-lowering)}}
  %c = fusion.matmul %a, %b : tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<16x32xf32> -> tensor<4x2x8x32xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %c : tensor<4x2x8x32xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}

// DECOMPOSED:      hir.launch ins(%{{.*}} = %{{.*}} : memref<1x8x16xf32, strided<[128, 16, 1], offset: ?>> as tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) outs(%{{.*}} : memref<2x8x16xf32, strided<[128, 16, 1], offset: ?>>) {
// DECOMPOSED-NEXT:   fusion.set %{{.*}} : tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
// DECOMPOSED:      hir.launch ins(
// DECOMPOSED-NEXT:   fusion.matmul %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
