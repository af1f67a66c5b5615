// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering | filecheck %s

// stream(N) must divide the extent of its axis: the verifier rejects the type before any pass.

func.func @result(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  // expected-error@+1 {{'fusion.set' op result: stream(4) does not divide the extent 6 of axis 0}}
  %y = fusion.set %x : tensor<6x8xf32> -> tensor<6x8xf32, #fusion.parallel<[stream(4), serial]>>
  func.return %x : tensor<6x8xf32>
}

// -----

func.func @inner_axis(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  // expected-error@+1 {{'fusion.exp' op result: stream(3) does not divide the extent 8 of axis 1}}
  %y = fusion.exp %x : tensor<6x8xf32> -> tensor<6x8xf32, #fusion.parallel<[serial, stream(3)]>>
  func.return %x : tensor<6x8xf32>
}

// -----

// A dynamic extent is checked at run time (hir.alias_chunk), not here.

// CHECK: func.func @dynamic(
// CHECK: hir.alias_chunk
func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32, #fusion.parallel<[stream(4), serial]>> {
  %y = fusion.set %x : tensor<?x8xf32> -> tensor<?x8xf32, #fusion.parallel<[stream(4), serial]>>
  func.return %y : tensor<?x8xf32, #fusion.parallel<[stream(4), serial]>>
}
