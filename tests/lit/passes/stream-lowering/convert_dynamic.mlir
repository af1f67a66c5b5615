// RUN: hir-opt %s -p convert-fusion-to-hir | filecheck %s

// convert-fusion-to-hir alone on dynamic extents: each extent of an argument is read once, at the
// top (memref.dim); %c's sizes are found through the add's axis map, %d's through the mul's (its
// operand %c, whose sizes are those memref.dims again); both loops run to the same value, so the
// two loops differ only in their bodies and hir-loop-fusion can merge them.

// CHECK-LABEL: func.func @add_mul(
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    [[ROWS:%[a-z0-9_]+]] = memref.dim %a, %c0 : memref<?x?xf32>
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    [[COLS:%[a-z0-9_]+]] = memref.dim %a, %c1 : memref<?x?xf32>
// CHECK-NEXT:    %num_streams = hir.num_streams
// CHECK-NEXT:    %main = hir.get_current_stream
// CHECK-NEXT:    %c = hir.allocate([[ROWS]], [[COLS]]) : memref<?x?xf32>
// CHECK-NEXT:    hir.stream_for {{%[a-z0-9_]+}} = %c0 to [[ROWS]] step %c1 streams({{%[a-z0-9_]+}}) of %num_streams from %main {
// CHECK:           fusion.add
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    %d = hir.allocate([[ROWS]], [[COLS]]) : memref<?x?xf32>
// CHECK-NEXT:    hir.stream_for {{%[a-z0-9_]+}} = %c0 to [[ROWS]] step %c1 streams({{%[a-z0-9_]+}}) of %num_streams from %main {
// CHECK:           fusion.mul
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %d : memref<?x?xf32>
// CHECK-NOT:     memref.dim
func.func @add_mul(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32, #fusion.parallel<[stream, serial]>> {
  %c = fusion.add %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32, #fusion.parallel<[stream, serial]>>
  %d = fusion.mul %c, %a : tensor<?x?xf32, #fusion.parallel<[stream, serial]>>, tensor<?x?xf32> -> tensor<?x?xf32, #fusion.parallel<[stream, serial]>>
  func.return %d : tensor<?x?xf32, #fusion.parallel<[stream, serial]>>
}
