// RUN: hir-opt %s -p 'hir-lower-communication{backend=copy-engine}' --verify-diagnostics
// RUN: hir-opt %s -p hir-lower-communication | filecheck %s --check-prefix=NCCL

// The copy-engine reduce-scatter computes each destination's partial where the sum is, so it
// moves the partial's producer (the matmul launch) down to the sum. Here a launch in between
// writes the matmul's input %a: moving the matmul past it would read the new values, so the
// lowering refuses, at the sum. The NCCL backend leaves the producer where it is.

// NCCL: fusion.neg
// NCCL: hir.reduce_scatter sum
builtin.module {
  func.func @main(%a: memref<4x1x2x16x64xf32> {fusion.type = tensor<4x2x2x16x64xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>}, %b: memref<1x1x1x64x48xf32> {fusion.type = tensor<1x2x1x64x48xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>}) -> (memref<4x1x16x48xf32> {fusion.type = tensor<4x2x16x48xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>}) {
    %c4 = arith.constant 4 : index
    %num_streams = hir.num_streams
    %main = hir.get_current_stream
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %p = hir.allocate() : memref<4x1x2x16x48xf32>
    %c = hir.allocate() : memref<4x1x16x48xf32>
    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %num_streams from %main {
      %a_i = hir.alias_select %a[%i] axis 0 : memref<4x1x2x16x64xf32> -> memref<1x2x16x64xf32, strided<[2048, 1024, 64, 1], offset: ?>>
      %b_i = hir.alias_select %b[%c0] axis 0 : memref<1x1x1x64x48xf32> -> memref<1x1x64x48xf32, strided<[3072, 3072, 48, 1], offset: ?>>
      %p_i = hir.alias_select %p[%i] axis 0 : memref<4x1x2x16x48xf32> -> memref<1x2x16x48xf32, strided<[1536, 768, 48, 1], offset: ?>>
      hir.launch ins(%a_1 = %a_i, %b_1 = %b_i : memref<1x2x16x64xf32, strided<[2048, 1024, 64, 1], offset: ?>>, memref<1x1x64x48xf32, strided<[3072, 3072, 48, 1], offset: ?>>) outs(%p_i : memref<1x2x16x48xf32, strided<[1536, 768, 48, 1], offset: ?>>) {
        %p_1 = fusion.matmul %a_1, %b_1 : tensor<1x2x16x64xf32>, tensor<1x1x64x48xf32> -> tensor<1x2x16x48xf32>
        hir.yield %p_1 : tensor<1x2x16x48xf32>
      }
      %a_w = hir.alias_select %a[%i] axis 0 : memref<4x1x2x16x64xf32> -> memref<1x2x16x64xf32, strided<[2048, 1024, 64, 1], offset: ?>>
      hir.launch ins(%x = %a_i : memref<1x2x16x64xf32, strided<[2048, 1024, 64, 1], offset: ?>>) outs(%a_w : memref<1x2x16x64xf32, strided<[2048, 1024, 64, 1], offset: ?>>) {
        %n = fusion.neg %x : tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
        hir.yield %n : tensor<1x2x16x64xf32>
      }
      %p_i_1 = hir.alias_select %p[%i] axis 0 : memref<4x1x2x16x48xf32> -> memref<1x2x16x48xf32, strided<[1536, 768, 48, 1], offset: ?>>
      %c_i = hir.alias_select %c[%i] axis 0 : memref<4x1x16x48xf32> -> memref<1x16x48xf32, strided<[768, 48, 1], offset: ?>>
      // expected-error@+1 {{'hir.launch' op the copy-engine reduce-scatter moves the partial's producer to the sum, but an op in between writes its input; lower it with backend=nccl}}
      hir.launch ins(%p_1 = %p_i_1 : memref<1x2x16x48xf32, strided<[1536, 768, 48, 1], offset: ?>> as tensor<2x2x16x48xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>) outs(%c_i : memref<1x16x48xf32, strided<[768, 48, 1], offset: ?>>) {
        %c_1 = fusion.sum %p_1 dims = [0] : tensor<2x2x16x48xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x16x48xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
        hir.yield %c_1 : tensor<2x16x48xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
      }
    }
    func.return %c : memref<4x1x16x48xf32>
  }
}

