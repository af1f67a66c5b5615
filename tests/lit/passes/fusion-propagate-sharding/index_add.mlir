// RUN: hir-opt %s -p fusion-propagate-sharding | filecheck %s

// fusion-propagate-sharding through fusion.index_add: an axis off `dim` carries x's (or
// source's) didx axis to the result, as an elementwise op would; the indexed axis `dim` maps to
// nothing, so a didx axis there gives nothing forward, and backward the result is never sharded
// on it (each device's shard would need the source slices of every device's positions): it stays
// replicated, and its consumer slices it. The index is replicated on the mesh. The indices are
// made in range from random inputs (a remainder by the extent of `dim`): the multi-device
// corpora run these functions.

// Forward off dim: x and source sharded on their columns give the result those columns.
// CHECK-LABEL: func.func @forward_off_dim(
// CHECK:         %i = fusion.remainder %raw, %n : {{.*}} -> tensor<6xi64, #fusion.parallel<[serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %y = fusion.index_add %x, %i, %s dim = 0 : {{.*}} -> tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
func.func @forward_off_dim(%x: tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, %raw: tensor<6xi64>, %s: tensor<6x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>) -> tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> {
  %n = fusion.full 10 : tensor<6xi64>
  %i = fusion.remainder %raw, %n : tensor<6xi64>, tensor<6xi64> -> tensor<6xi64>
  %y = fusion.index_add %x, %i, %s dim = 0 : tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>, tensor<6xi64>, tensor<6x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>> -> tensor<10x2xf32>
  %r = fusion.relu %y : tensor<10x2xf32> -> tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %r : tensor<10x2xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}

// Forward along dim: x's rows are the indexed axis, so the result is replicated on x's mesh.
// CHECK-LABEL: func.func @forward_on_dim(
// CHECK:         %y = fusion.index_add %x, %i, %s dim = 0 : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>{{$}}
func.func @forward_on_dim(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %raw: tensor<6xi64>, %s: tensor<6x8xf32>) -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %n = fusion.full 2 : tensor<6xi64>
  %i = fusion.remainder %raw, %n : tensor<6xi64>, tensor<6xi64> -> tensor<6xi64>
  %y = fusion.index_add %x, %i, %s dim = 0 : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<6xi64>, tensor<6x8xf32> -> tensor<2x8xf32>
  %r = fusion.relu %y : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %r : tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}

// Backward: a consumer sharded on the indexed axis (one index per device) leaves the result
// replicated; one sharded off it shards the result there.
// CHECK-LABEL: func.func @backward(
// CHECK:         %y = fusion.index_add %x, %i, %s dim = 0 : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>{{$}}
// CHECK-NEXT:    %r = fusion.relu %y
// CHECK-NEXT:    %z = fusion.index_add %x, %i, %s dim = 0 : {{.*}} -> tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>{{$}}
func.func @backward(%x: tensor<2x8xf32>, %raw: tensor<6xi64>, %s: tensor<6x8xf32>) -> (tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>) {
  %n = fusion.full 2 : tensor<6xi64>
  %i = fusion.remainder %raw, %n : tensor<6xi64>, tensor<6xi64> -> tensor<6xi64>
  %y = fusion.index_add %x, %i, %s dim = 0 : tensor<2x8xf32>, tensor<6xi64>, tensor<6x8xf32> -> tensor<2x8xf32>
  %r = fusion.relu %y : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %z = fusion.index_add %x, %i, %s dim = 0 : tensor<2x8xf32>, tensor<6xi64>, tensor<6x8xf32> -> tensor<2x8xf32>
  %e = fusion.exp %z : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
  func.return %r, %e : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1]>>
}
