// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// fusion.index_add (and fusion.index_copy, last) streamed off its indexed axis: x and source are sliced on the streamed axis,
// the index is read whole, and `dim` is renumbered where the slice drops an axis before it (the
// refusals along `dim`: indexing_ops_invalid.mlir). The indices are made in range from the
// random inputs the tests run this with (a remainder by the extent of `dim`).

// One row at a time: the streamed axis 0 leaves the operands, dim 1 becomes 0.
// CHECK-LABEL: func.func @rows(
// CHECK:       %x_i = hir.alias_select %x[{{%[a-z0-9_]+}}] axis 0 : memref<4x10x8xf32> -> memref<10x8xf32, strided<[8, 1], offset: ?>>
// CHECK:       %s_i = hir.alias_select %s[{{%[a-z0-9_]+}}] axis 0 : memref<4x6x8xf32> -> memref<6x8xf32, strided<[8, 1], offset: ?>>
// CHECK:       hir.launch ins({{%[a-z0-9_]+}} = %x_i, {{%[a-z0-9_]+}} = %i, {{%[a-z0-9_]+}} = %s_i :
// CHECK-NEXT:    fusion.index_add {{.*}} dim = 0 : tensor<10x8xf32>, tensor<6xi64>, tensor<6x8xf32> -> tensor<10x8xf32>
func.func @rows(%x: tensor<4x10x8xf32>, %raw: tensor<6xi64>, %s: tensor<4x6x8xf32>) -> tensor<4x10x8xf32, #fusion.parallel<[stream, serial, serial]>> {
  %n = fusion.full 10 : tensor<6xi64>
  %i = fusion.remainder %raw, %n : tensor<6xi64>, tensor<6xi64> -> tensor<6xi64>
  %y = fusion.index_add %x, %i, %s dim = 1 : tensor<4x10x8xf32>, tensor<6xi64>, tensor<4x6x8xf32> -> tensor<4x10x8xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %y : tensor<4x10x8xf32, #fusion.parallel<[stream, serial, serial]>>
}

// -----

// stream(2) chunks of the trailing axis keep the ranks and dim.
// CHECK-LABEL: func.func @column_chunks(
// CHECK:       %x_i = hir.alias_chunk %x[{{%[a-z0-9_]+}}] axis 1 chunks 2
// CHECK:       %s_i = hir.alias_chunk %s[{{%[a-z0-9_]+}}] axis 1 chunks 2
// CHECK:       fusion.index_add {{.*}} dim = 0 : tensor<10x4xf32>, tensor<6xi64>, tensor<6x4xf32> -> tensor<10x4xf32>
func.func @column_chunks(%x: tensor<10x8xf32>, %raw: tensor<6xi64>, %s: tensor<6x8xf32>) -> tensor<10x8xf32, #fusion.parallel<[serial, stream(2)]>> {
  %n = fusion.full 10 : tensor<6xi64>
  %i = fusion.remainder %raw, %n : tensor<6xi64>, tensor<6xi64> -> tensor<6xi64>
  %y = fusion.index_add %x, %i, %s dim = 0 : tensor<10x8xf32>, tensor<6xi64>, tensor<6x8xf32> -> tensor<10x8xf32, #fusion.parallel<[serial, stream(2)]>>
  func.return %y : tensor<10x8xf32, #fusion.parallel<[serial, stream(2)]>>
}

// -----

// fusion.index_copy slices alike: a cache of 4 sequences, each iteration writes its sequence's
// new positions with the whole index.
// CHECK-LABEL: func.func @copy_rows(
// CHECK:       %c_i = hir.alias_select %c[{{%[a-z0-9_]+}}] axis 0 : memref<4x10x8xf32> -> memref<10x8xf32, strided<[8, 1], offset: ?>>
// CHECK:       %k_i = hir.alias_select %k[{{%[a-z0-9_]+}}] axis 0 : memref<4x2x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
// CHECK:       fusion.index_copy {{.*}} dim = 0 : tensor<10x8xf32>, tensor<2xi64>, tensor<2x8xf32> -> tensor<10x8xf32>
func.func @copy_rows(%c: tensor<4x10x8xf32>, %raw: tensor<2xi64>, %k: tensor<4x2x8xf32>) -> tensor<4x10x8xf32, #fusion.parallel<[stream, serial, serial]>> {
  %n = fusion.full 10 : tensor<2xi64>
  %i = fusion.remainder %raw, %n : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
  %y = fusion.index_copy %c, %i, %k dim = 1 : tensor<4x10x8xf32>, tensor<2xi64>, tensor<4x2x8xf32> -> tensor<4x10x8xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %y : tensor<4x10x8xf32, #fusion.parallel<[stream, serial, serial]>>
}
