// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s

// The ops of models in stream loops, sliced on an axis they can be sliced on (the
// refusals on the others: model_ops_invalid.mlir).

// A reshape keeps axis 0 (a group of its own): both sides are sliced on it.
// CHECK-LABEL: func.func @reshape_kept(
// CHECK:       %x_i = hir.alias_select %x[{{%[a-z0-9_]+}}] axis 0 : memref<4x6x8xf32> -> memref<6x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:  %y_i = hir.alias_select %y[{{%[a-z0-9_]+}}] axis 0 : memref<4x48xf32> -> memref<48xf32, strided<[1], offset: ?>>
// CHECK:       fusion.reshape {{%[a-z0-9_]+}} : tensor<6x8xf32> -> tensor<48xf32>
func.func @reshape_kept(%x: tensor<4x6x8xf32>) -> tensor<4x48xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.reshape %x : tensor<4x6x8xf32> -> tensor<4x48xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x48xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// A slice streamed on an axis it keeps whole: the axis's entries leave offsets and strides.
// CHECK-LABEL: func.func @slice_kept(
// CHECK:       %x_i = hir.alias_select %x[{{%[a-z0-9_]+}}] axis 0
// CHECK:       fusion.slice {{%[a-z0-9_]+}} offsets = [5] strides = [1] : tensor<8xf32> -> tensor<3xf32>
func.func @slice_kept(%x: tensor<4x8xf32>) -> tensor<4x3xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.slice %x offsets = [0, 5] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x3xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x3xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// A concat streamed off its dim: every operand is sliced, and dim is renumbered.
// CHECK-LABEL: func.func @concat_off_dim(
// CHECK:       %a_i = hir.alias_select %a[{{%[a-z0-9_]+}}] axis 0
// CHECK-NEXT:  %b_i = hir.alias_select %b[{{%[a-z0-9_]+}}] axis 0
// CHECK:       fusion.concat {{%[a-z0-9_]+}}, {{%[a-z0-9_]+}} dim = 0 : tensor<2xf32>, tensor<6xf32> -> tensor<8xf32>
func.func @concat_off_dim(%a: tensor<4x2xf32>, %b: tensor<4x6xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.concat %a, %b dim = 1 : tensor<4x2xf32>, tensor<4x6xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// A norm streamed on a leading axis: weight and bias are read whole, dims renumbered.
// CHECK-LABEL: func.func @layer_norm_rows(
// CHECK:       hir.launch ins({{%[a-z0-9_]+}} = %x_i, {{%[a-z0-9_]+}} = %w, {{%[a-z0-9_]+}} = %b :
// CHECK-NEXT:    fusion.layer_norm {{.*}} dims = [0] eps = 1.000000e-05 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
func.func @layer_norm_rows(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.layer_norm %x, %w, %b dims = [1] eps = 1.000000e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// stream(2) chunks of the leading axis keep the ranks and dims.
// CHECK-LABEL: func.func @rms_norm_chunks(
// CHECK:       %x_i = hir.alias_chunk %x[{{%[a-z0-9_]+}}] axis 0 chunks 2
// CHECK:       fusion.rms_norm {{.*}} dims = [1] eps = 1.000000e-06 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
func.func @rms_norm_chunks(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>> {
  %y = fusion.rms_norm %x, %w dims = [1] eps = 1.000000e-06 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
}

// -----

// CHECK-LABEL: func.func @mean_rows(
// CHECK:       %x_i = hir.alias_select %x[{{%[a-z0-9_]+}}] axis 0
// CHECK:       fusion.mean {{%[a-z0-9_]+}} dims = [0] : tensor<8xf32> -> tensor<f32>
func.func @mean_rows(%x: tensor<4x8xf32>) -> tensor<4xf32, #fusion.parallel<[stream]>> {
  %y = fusion.mean %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32, #fusion.parallel<[stream]>>
  func.return %y : tensor<4xf32, #fusion.parallel<[stream]>>
}

// -----

// A masked softmax (attention scores): the constant, silu, where and softmax fuse into one
// segment, run row by row; the constant is made in each iteration.
// CHECK-LABEL: func.func @masked_softmax(
// CHECK:       hir.launch ins({{%[a-z0-9_]+}} = %x_i, {{%[a-z0-9_]+}} = %m_i :
// CHECK-NEXT:    fusion.full -1.000000e+09 : tensor<8xf32>
// CHECK-NEXT:    fusion.silu
// CHECK-NEXT:    fusion.where
// CHECK-NEXT:    fusion.softmax {{%[a-z0-9_]+}} dim = 0 : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:    hir.yield
func.func @masked_softmax(%x: tensor<4x8xf32>, %m: tensor<4x8xi1>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %ninf = fusion.full -1.000000e+09 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %a = fusion.silu %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %s = fusion.where %m, %a, %ninf : tensor<4x8xi1>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %p = fusion.softmax %s dim = 1 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %p : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// A dynamic extent of the softmax axis, which the loop cannot slice, still sizes the result: the
// op's extent map says it is the operand's.
// CHECK-LABEL: func.func @softmax_dynamic(
// CHECK:       %[[N:.+]] = memref.dim %x, %c1 : memref<4x?xf32>
// CHECK:       %y = hir.allocate(%[[N]]) : memref<4x?xf32>
// CHECK:       fusion.softmax {{%[a-z0-9_]+}} dim = 0 : tensor<?xf32> -> tensor<?xf32>
func.func @softmax_dynamic(%x: tensor<4x?xf32>) -> tensor<4x?xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.softmax %x dim = 1 : tensor<4x?xf32> -> tensor<4x?xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x?xf32, #fusion.parallel<[stream, serial]>>
}
