// RUN: hir-opt %s -p 'fusion-stream-overlap{overlap=never}' --verify-diagnostics
// RUN: hir-opt %s -p 'stream-lowering{overlap=auto}' | filecheck %s --check-prefix=AUTO
// RUN: not hir-opt %S/../../../../examples/multidevice/matmul_reduce_scatter.mlir -p 'fusion-stream-overlap{overlap=never}' 2>&1 | filecheck %s --check-prefix=TWO
// RUN: hir-opt %S/../../../../examples/multidevice/matmul_reduce_scatter.mlir -p 'stream-lowering{overlap=auto}' | filecheck %s --check-prefix=TWO-AUTO

// The serial form of a GEMM + reduce-scatter in S > 1 chunks would reduce-scatter the whole partial
// product along the result's didx axis 1, behind the axis of the S chunks, which no collective
// takes: `never` reports it at the sum, on two devices and on one alike; `auto` keeps the
// pipeline, the only form the lowering takes (it used to pick the serial form, which
// hir-lower-communication then refused at the launch).

// TWO: examples/multidevice/matmul_reduce_scatter.mlir:8:3: error: 'fusion.sum' op overlap=never: cannot make the stream axes serial: its partial sums would be reduce-scattered whole along the result's didx axis 1, which has axes of extent 4 before it (collectives need the scattered axis outermost)
// TWO-NOT: Traceback
// TWO-AUTO: hir.for
// TWO-AUTO:   hir.reduce_scatter sum {{.*}} axis 0 mesh = [0, 1]

// AUTO-LABEL: func.func @one_device
// AUTO:         hir.for
// AUTO:           hir.reduce_scatter sum {{.*}} axis 0 mesh = [0]
func.func @one_device(%a: tensor<4x1x1x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0]>>,
                %b: tensor<1x1x1x16x12xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0]>>)
    -> tensor<4x1x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>> {
  %p = fusion.matmul %a, %b : tensor<4x1x1x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0]>>, tensor<1x1x1x16x12xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0]>> -> tensor<4x1x1x8x12xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0]>>
  // expected-error@+1 {{'fusion.sum' op overlap=never: cannot make the stream axes serial: its partial sums would be reduce-scattered whole along the result's didx axis 1, which has axes of extent 4 before it (collectives need the scattered axis outermost)}}
  %c = fusion.sum %p dims = [1] : tensor<4x1x1x8x12xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0]>> -> tensor<4x1x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>>
  func.return %c : tensor<4x1x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0]>>
}
