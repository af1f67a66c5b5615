// RUN: hir-opt %S/../../../resharding/streamed_allgather.mlir --stream-lowering | filecheck %s --check-prefix=AG
// RUN: hir-opt %S/../../../resharding/streamed_allreduce.mlir --stream-lowering | filecheck %s --check-prefix=AR
// RUN: hir-opt %S/../../../resharding/streamed_reduce_scatter.mlir --stream-lowering | filecheck %s --check-prefix=RS
// RUN: hir-opt %S/../../../resharding/ag_after_matmul.mlir --stream-lowering | filecheck %s --check-prefix=AFTER

// One collective per chunk of a stream loop (nvFuser's MultiDeviceStreamParallelTypeTest
// Allgather, Allreduce and ReduceScatter, and AGMatmulTest's AG_after_Matmul), on D=2: the output
// allocated before a fork loop, then a main loop whose iteration i switches to its stream, views
// row i of the operand and of the result, runs the collective on them, waits for it, switches back
// to the caller's stream and makes it wait for the worker. The modules run on 2 ranks in
// tests/test_resharding.py.

// AG-LABEL: func.func @main(%x: memref<4x1xf32>
// AG:         %y = hir.allocate() : memref<4x2xf32>
// AG-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c4 step %c1 {
// AG:           hir.synchronize %main
// AG-NEXT:    }
// AG-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// AG-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// AG-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// AG-NEXT:      hir.set_current_stream [[S]]
// AG-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x1xf32> -> memref<1xf32, strided<[1], offset: ?>>
// AG-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 0 : memref<4x2xf32> -> memref<2xf32, strided<[1], offset: ?>>
// AG-NEXT:      [[W:%[a-z0-9_]+]] = hir.allgather %x_i into %y_i axis 0 mesh = [0, 1]
// AG-NEXT:      hir.wait [[W]]
// AG-NEXT:      hir.set_current_stream %main
// AG-NEXT:      hir.synchronize [[S]]{{$}}
// AG-NEXT:    }
// AG-NEXT:    func.return %y : memref<4x2xf32>

// The sum of the device's shard of row i into row i of the result, then an in-place all-reduce.
// AR-LABEL: func.func @main(%x: memref<4x1x8xf32>
// AR:         %y = hir.allocate() : memref<4x8xf32>
// AR:           hir.synchronize %main
// AR:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// AR-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// AR-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// AR-NEXT:      hir.set_current_stream [[S]]
// AR-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x1x8xf32> -> memref<1x8xf32, strided<[8, 1], offset: ?>>
// AR-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// AR-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %x_i : {{.*}}) outs(%y_i : {{.*}}) {
// AR-NEXT:        fusion.sum {{.*}} dims = [0] : tensor<1x8xf32> -> tensor<8xf32>
// AR-NEXT:        hir.yield
// AR-NEXT:      }
// AR-NEXT:      [[W:%[a-z0-9_]+]] = hir.allreduce sum %y_i into %y_i mesh = [0, 1]
// AR-NEXT:      hir.wait [[W]]
// AR-NEXT:      hir.set_current_stream %main
// AR-NEXT:      hir.synchronize [[S]]{{$}}
// AR-NEXT:    }

// The device's partial of row i is a view of its shard without the extent-1 didx axis: no copy.
// RS-LABEL: func.func @main(%x: memref<4x1x2x8xf32>
// RS:         %y = hir.allocate() : memref<4x1x8xf32>
// RS:           hir.synchronize %main
// RS:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// RS-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// RS-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// RS-NEXT:      hir.set_current_stream [[S]]
// RS-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x1x2x8xf32> -> memref<1x2x8xf32, strided<[16, 8, 1], offset: ?>>
// RS-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 0 : memref<4x1x8xf32> -> memref<1x8xf32, strided<[8, 1], offset: ?>>
// RS-NEXT:      %partial = hir.alias_select %x_i[%c0] axis 0 : memref<1x2x8xf32, strided<[16, 8, 1], offset: ?>> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
// RS-NEXT:      [[W:%[a-z0-9_]+]] = hir.reduce_scatter sum %partial into %y_i axis 0 mesh = [0, 1]
// RS-NEXT:      hir.wait [[W]]
// RS-NEXT:      hir.set_current_stream %main
// RS-NEXT:      hir.synchronize [[S]]{{$}}
// RS-NEXT:    }

// nvFuser's expected body for AG_after_Matmul: set stream, select A_i, select P_i, matmul,
// select C_i, all-gather, wait, back to main, synchronize. P_i lives in one iteration, so P is a
// ring of one chunk per stream.
// AFTER-LABEL: func.func @main(%a: memref<4x1x8x16xf32>
// AFTER:         %c = hir.allocate() : memref<4x2x8x24xf32>
// AFTER-NEXT:    %slots = arith.minui %num_streams, %c4 : index
// AFTER-NEXT:    %p = hir.allocate(%slots) : memref<?x1x8x24xf32>
// AFTER:           hir.synchronize %main
// AFTER:         hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// AFTER-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// AFTER-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// AFTER-NEXT:      hir.set_current_stream [[S]]
// AFTER-NEXT:      %a_i = hir.alias_select %a{{\[}}[[I]]] axis 0
// AFTER-NEXT:      %p_i = hir.alias_select %p{{\[}}[[K]]] axis 0
// AFTER-NEXT:      hir.launch ins({{.*}}%a_i{{.*}}%b{{.*}}) outs(%p_i : {{.*}}) {
// AFTER-NEXT:        fusion.matmul {{.*}} : tensor<1x8x16xf32>, tensor<16x24xf32> -> tensor<1x8x24xf32>
// AFTER-NEXT:        hir.yield
// AFTER-NEXT:      }
// AFTER-NEXT:      %c_i = hir.alias_select %c{{\[}}[[I]]] axis 0
// AFTER-NEXT:      [[W:%[a-z0-9_]+]] = hir.allgather %p_i into %c_i axis 0 mesh = [0, 1]
// AFTER-NEXT:      hir.wait [[W]]
// AFTER-NEXT:      hir.set_current_stream %main
// AFTER-NEXT:      hir.synchronize [[S]]{{$}}
// AFTER-NEXT:    }
// AFTER-NEXT:    func.return %c : memref<4x2x8x24xf32>
