// RUN: hir-opt %s --split-input-file -p fusion-decompose-resharding | filecheck %s
// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s --check-prefix=LOWERED

// fusion.index_add on a mesh: an axis off `dim` sharded alike on x, source and the result
// computes locally, each device adding its columns of the source slices. A didx axis on `dim`
// (x's or source's) is gathered first: each device's rows may receive any source slice. (A
// result sharded on `dim` is the verifier's error: tests/lit/fusion/index_add_invalid.mlir.)
// The indices are made in range from random inputs: the multi-device corpora run these functions.

// CHECK-LABEL: func.func @columns(
// CHECK-NOT:     fusion.set
// CHECK:         fusion.index_add %x, %i, %s dim = 0 :
// LOWERED-LABEL: func.func @columns(
// LOWERED-NOT:     hir.allgather
// LOWERED:         fusion.index_add {{.*}} dim = 0 : tensor<10x1xf32>, tensor<6xi64>, tensor<6x1xf32> -> tensor<10x1xf32>
func.func @columns(%x: tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, %raw: tensor<6xi64>, %s: tensor<6x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>) -> tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
  %n = fusion.full 10 : tensor<6xi64>
  %i = fusion.remainder %raw, %n : tensor<6xi64>, tensor<6xi64> -> tensor<6xi64>
  %y = fusion.index_add %x, %i, %s dim = 0 : tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, tensor<6xi64>, tensor<6x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> -> tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %y : tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}

// -----

// x's rows are the indexed axis: x is gathered, and the replicated result computed whole.
// CHECK-LABEL: func.func @rows(
// CHECK:         %[[XG:[a-z0-9_]+]] = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.index_add %[[XG]], %i, %s dim = 0 :
// LOWERED-LABEL: func.func @rows(
// LOWERED:         hir.allgather %x into
// LOWERED:         fusion.index_add {{.*}} dim = 0 : tensor<4x8xf32>, tensor<6xi64>, tensor<6x8xf32> -> tensor<4x8xf32>
func.func @rows(%x: tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %raw: tensor<6xi64>, %s: tensor<6x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %n = fusion.full 4 : tensor<6xi64>
  %i = fusion.remainder %raw, %n : tensor<6xi64>, tensor<6xi64> -> tensor<6xi64>
  %y = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<6xi64>, tensor<6x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}

// -----

// The source sharded along the indexed axis (its rows, one per index entry) is gathered too;
// the result keeps x's columns.
// CHECK-LABEL: func.func @source_rows(
// CHECK:         %[[SG:[a-z0-9_]+]] = fusion.set %s : tensor<6x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<6x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.index_add %x, %i, %[[SG]] dim = 0 :
// LOWERED-LABEL: func.func @source_rows(
// LOWERED:         hir.allgather %s into
// LOWERED:         fusion.index_add {{.*}} dim = 0 : tensor<4x8xf32>, tensor<6xi64>, tensor<6x8xf32> -> tensor<4x8xf32>
func.func @source_rows(%x: tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, %raw: tensor<6xi64>, %s: tensor<6x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %n = fusion.full 4 : tensor<6xi64>
  %i = fusion.remainder %raw, %n : tensor<6xi64>, tensor<6xi64> -> tensor<6xi64>
  %y = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>, tensor<6xi64>, tensor<6x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}
