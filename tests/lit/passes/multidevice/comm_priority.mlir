// RUN: hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'stream-lowering{backend=copy-engine comm-priority=high}' | filecheck %s
// RUN: hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'stream-lowering{backend=copy-engine}' | filecheck %s --check-prefix=NORMAL
// RUN: hir-opt %S/../../../../examples/multidevice/matmul_reduce_scatter.mlir -p 'stream-lowering{backend=copy-engine comm-priority=high}' | filecheck %s --check-prefix=REDUCE
// RUN: hir-opt %S/../../../../examples/multidevice/matmul_allreduce.mlir -p 'stream-lowering{backend=copy-engine comm-priority=high}' | filecheck %s --check-prefix=REDUCE
// RUN: not hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'stream-lowering{comm-priority=max}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not hir-opt %S/../../../../examples/multidevice/ag_matmul_by_device.mlir -p 'stream-lowering{intermediates=some}' 2>&1 | filecheck %s --check-prefix=INTERMEDIATES

// comm-priority=high: the comm stream the copy-engine backend adds is a high-priority pool
// stream; the workers of the loops (the compute streams) keep the normal priority.

// CHECK:         %comm = hir.stream %num_streams high_priority
// CHECK-NOT:     high_priority
// The copy-engine reduce-scatter and all-reduce add a comm stream and a reduction stream: both
// high priority; the workers keep the normal priority.
// REDUCE:        %comm = hir.stream %num_streams high_priority
// REDUCE-NEXT:   arith.addi
// REDUCE-NEXT:   %reduce = hir.stream %{{.*}} high_priority
// REDUCE-NOT:    high_priority
// NORMAL:        %comm = hir.stream %num_streams{{$}}
// NORMAL-NOT:    high_priority
// BAD: hir-opt: error: invalid options for pass 'stream-lowering': comm-priority must be one of normal, high, got 'max'
// BAD-NOT: Traceback
// INTERMEDIATES: invalid options for pass 'stream-lowering': intermediates must be one of ring, whole, got 'some'
