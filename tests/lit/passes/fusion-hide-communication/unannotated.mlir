// RUN: hir-opt %s -p fusion-hide-communication | filecheck %s

// A tensor on no mesh (not annotated yet: fusion-propagate-sharding runs later) moves no bytes
// that the estimate can count; the op that reshards it is still a communication, and the order
// stays a valid one. (Found by the multi-device fuzzer: the estimate divided by the empty mesh.)

// CHECK-LABEL: func.func @unannotated(
// CHECK:         %t = fusion.tanh %a
// CHECK:         %e = fusion.exp %t
// CHECK:         func.return %e, %p
func.func @unannotated(%a: tensor<1x6xbf16, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %b: tensor<6x6xbf16, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> (tensor<1x6xbf16, #fusion.parallel<[didx, stream], mesh = [0, 1]>>, tensor<6x6xbf16, #fusion.parallel<[stream, serial], mesh = [0, 1]>>) {
  %r = fusion.erf %b : tensor<6x6xbf16, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<6x6xbf16>
  %p = fusion.permute %r perm = [0, 1] : tensor<6x6xbf16> -> tensor<6x6xbf16, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
  %t = fusion.tanh %a : tensor<1x6xbf16, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<1x6xbf16>
  %e = fusion.exp %t : tensor<1x6xbf16> -> tensor<1x6xbf16, #fusion.parallel<[didx, stream], mesh = [0, 1]>>
  func.return %e, %p : tensor<1x6xbf16, #fusion.parallel<[didx, stream], mesh = [0, 1]>>, tensor<6x6xbf16, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
}
