// RUN: hir-opt %s -p 'stream-lowering{backend=copy-engine}' | filecheck %s

// A reduce-scatter whose result the same iteration goes on using (the tanh, fused into the
// loop): the adds run on the reduction stream, so the worker waits for it before the tanh reads C_i.

// CHECK:      hir.launch ins({{.*}}) outs(%c_i : {{.*}}) {
// CHECK-NEXT:   fusion.add
// CHECK:      hir.set_current_stream %s
// CHECK-NEXT: hir.synchronize %reduce
// CHECK-NEXT: %[[D:[a-z0-9_]+]] = hir.alias_select %d[%i{{.*}}] axis 0
// CHECK-NEXT: hir.launch ins(%{{.*}} = %c_i : {{.*}}) outs(%[[D]] : {{.*}}) {
// CHECK-NEXT:   fusion.tanh

func.func @main(%a: tensor<2x2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>,
                %b: tensor<1x2x1x16x24xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<2x2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>, tensor<1x2x1x16x24xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<2x2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %d = fusion.tanh %c : tensor<2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %d : tensor<2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}
