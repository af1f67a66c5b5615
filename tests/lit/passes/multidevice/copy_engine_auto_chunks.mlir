// RUN: hir-opt %s --split-input-file -p 'stream-lowering{backend=copy-engine}' | filecheck %s

// How many pushes the copy-engine all-gather chooses per shard (`chunks=0`, the default), on the
// modules of benchmarks/ag_gemm.py (bf16, K = 8192, 2 devices). One push when the GEMM on the
// local shard outlasts the push of a shard by a third (at the rates measured on 2x H200): the
// remote GEMM then finds its shard landed. Otherwise pushes of about 32 MiB, at most 4.

// M=16384, N=4096: a 128 MiB shard, pushed in about 0.36 ms; the local GEMM takes about 0.70 ms.
// CHECK-LABEL: func.func @m16384_n4096
// CHECK-NOT:   chunks
// CHECK:       hir.barrier
// CHECK-NOT:   chunks
// CHECK:       func.return
func.func @m16384_n4096(%a: tensor<2x8192x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %b: tensor<8192x4096xbf16>) -> tensor<2x8192x4096xbf16, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x8192x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<8192x4096xbf16> -> tensor<2x8192x4096xbf16, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<2x8192x4096xbf16, #fusion.parallel<[stream, serial, serial]>>
}

// -----

// M=32768, N=2048: a 256 MiB shard (about 0.73 ms) against a local GEMM of about 0.70 ms.
// CHECK-LABEL: func.func @m32768_n2048
// CHECK:       hir.for %chunk = %c0 to %c4 step %c1
func.func @m32768_n2048(%a: tensor<2x16384x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %b: tensor<8192x2048xbf16>) -> tensor<2x16384x2048xbf16, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x16384x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<8192x2048xbf16> -> tensor<2x16384x2048xbf16, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<2x16384x2048xbf16, #fusion.parallel<[stream, serial, serial]>>
}

// -----

// M=16384, N=1024: a 128 MiB shard against a local GEMM of about 0.17 ms.
// CHECK-LABEL: func.func @m16384_n1024
// CHECK:       hir.for %chunk = %c0 to %c4 step %c1
func.func @m16384_n1024(%a: tensor<2x8192x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %b: tensor<8192x1024xbf16>) -> tensor<2x8192x1024xbf16, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x8192x8192xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<8192x1024xbf16> -> tensor<2x8192x1024xbf16, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<2x8192x1024xbf16, #fusion.parallel<[stream, serial, serial]>>
}
