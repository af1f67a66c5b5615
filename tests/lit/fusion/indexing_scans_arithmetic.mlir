// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// The indexing ops (fusion.gather, fusion.index_select with an index of any rank, fusion.flip,
// fusion.iota), the scans (fusion.cumsum, fusion.argmax/argmin, fusion.topk largest|smallest) and
// the further arithmetic (fusion.minimum, the rounding divisions, remainders, log1p, roundings, sign).
// No parallel encodings here: the race and poison corpora run every parallel function of tests/lit on
// random inputs, which are no valid indices or divisors.

// CHECK-LABEL: func.func @gather(
func.func @gather(%x: tensor<4x8xf32>, %i: tensor<4x3xi64>) -> tensor<4x3xf32> {
  // CHECK-NEXT: %r = fusion.gather %x, %i dim = 1 : tensor<4x8xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
  %r = fusion.gather %x, %i dim = 1 : tensor<4x8xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
  // CHECK-NEXT: func.return %r : tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @index_select(
func.func @index_select(%w: tensor<10x16xf32>, %ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  // CHECK-NEXT: %r = fusion.index_select %w, %ids dim = 0 : tensor<10x16xf32>, tensor<2x4xi64> -> tensor<2x4x16xf32>
  %r = fusion.index_select %w, %ids dim = 0 : tensor<10x16xf32>, tensor<2x4xi64> -> tensor<2x4x16xf32>
  // CHECK-NEXT: func.return %r : tensor<2x4x16xf32>
  func.return %r : tensor<2x4x16xf32>
}

// CHECK-LABEL: func.func @flip(
func.func @flip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.flip %x dims = [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.flip %x dims = [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @iota(
func.func @iota() -> tensor<4x8xi64> {
  // CHECK-NEXT: %r = fusion.iota dim = 1 : tensor<4x8xi64>
  %r = fusion.iota dim = 1 : tensor<4x8xi64>
  // CHECK-NEXT: func.return %r : tensor<4x8xi64>
  func.return %r : tensor<4x8xi64>
}

// CHECK-LABEL: func.func @cumsum(
func.func @cumsum(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.cumsum %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.cumsum %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @argmax(
func.func @argmax(%x: tensor<4x8xf32>) -> tensor<4xi64> {
  // CHECK-NEXT: %r = fusion.argmax %x dim = 1 : tensor<4x8xf32> -> tensor<4xi64>
  %r = fusion.argmax %x dim = 1 : tensor<4x8xf32> -> tensor<4xi64>
  // CHECK-NEXT: func.return %r : tensor<4xi64>
  func.return %r : tensor<4xi64>
}

// CHECK-LABEL: func.func @argmin(
func.func @argmin(%x: tensor<4x8xi32>) -> tensor<8xi64> {
  // CHECK-NEXT: %r = fusion.argmin %x dim = 0 : tensor<4x8xi32> -> tensor<8xi64>
  %r = fusion.argmin %x dim = 0 : tensor<4x8xi32> -> tensor<8xi64>
  // CHECK-NEXT: func.return %r : tensor<8xi64>
  func.return %r : tensor<8xi64>
}

// CHECK-LABEL: func.func @topk(
func.func @topk(%x: tensor<4x8xf32>) -> tensor<4x2xi64> {
  // CHECK-NEXT: %r = fusion.topk smallest, %x k = 2 dim = 1 : tensor<4x8xf32> -> tensor<4x2xi64>
  %r = fusion.topk smallest, %x k = 2 dim = 1 : tensor<4x8xf32> -> tensor<4x2xi64>
  // CHECK-NEXT: func.return %r : tensor<4x2xi64>
  func.return %r : tensor<4x2xi64>
}

// CHECK-LABEL: func.func @minimum(
func.func @minimum(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.minimum %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.minimum %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @floordiv(
func.func @floordiv(%a: tensor<4x8xi64>, %b: tensor<4x8xi64>) -> tensor<4x8xi64> {
  // CHECK-NEXT: %r = fusion.floordiv %a, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
  %r = fusion.floordiv %a, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
  // CHECK-NEXT: func.return %r : tensor<4x8xi64>
  func.return %r : tensor<4x8xi64>
}

// CHECK-LABEL: func.func @truncdiv(
func.func @truncdiv(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.truncdiv %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.truncdiv %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @remainder(
func.func @remainder(%a: tensor<4x8xi32>, %b: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // CHECK-NEXT: %r = fusion.remainder %a, %b : tensor<4x8xi32>, tensor<4x8xi32> -> tensor<4x8xi32>
  %r = fusion.remainder %a, %b : tensor<4x8xi32>, tensor<4x8xi32> -> tensor<4x8xi32>
  // CHECK-NEXT: func.return %r : tensor<4x8xi32>
  func.return %r : tensor<4x8xi32>
}

// CHECK-LABEL: func.func @fmod(
func.func @fmod(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.fmod %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.fmod %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @bitwise(
func.func @bitwise(%a: tensor<4x8xi64>, %b: tensor<4x8xi64>) -> tensor<4x8xi64> {
  // CHECK-NEXT: %c = fusion.bitand %a, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
  %c = fusion.bitand %a, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
  // CHECK-NEXT: %d = fusion.bitor %c, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
  %d = fusion.bitor %c, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
  // CHECK-NEXT: %r = fusion.bitxor %d, %a : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
  %r = fusion.bitxor %d, %a : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
  // CHECK-NEXT: func.return %r : tensor<4x8xi64>
  func.return %r : tensor<4x8xi64>
}

// CHECK-LABEL: func.func @log1p(
func.func @log1p(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // CHECK-NEXT: %r = fusion.log1p %x : tensor<4x8xbf16> -> tensor<4x8xbf16>
  %r = fusion.log1p %x : tensor<4x8xbf16> -> tensor<4x8xbf16>
  // CHECK-NEXT: func.return %r : tensor<4x8xbf16>
  func.return %r : tensor<4x8xbf16>
}

// CHECK-LABEL: func.func @floor(
func.func @floor(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.floor %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.floor %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @ceil(
func.func @ceil(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.ceil %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.ceil %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @round(
func.func @round(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  // CHECK-NEXT: %r = fusion.round %x : tensor<4x8xf16> -> tensor<4x8xf16>
  %r = fusion.round %x : tensor<4x8xf16> -> tensor<4x8xf16>
  // CHECK-NEXT: func.return %r : tensor<4x8xf16>
  func.return %r : tensor<4x8xf16>
}

// CHECK-LABEL: func.func @trunc(
func.func @trunc(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.trunc %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.trunc %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @sign(
func.func @sign(%x: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // CHECK-NEXT: %r = fusion.sign %x : tensor<4x8xi32> -> tensor<4x8xi32>
  %r = fusion.sign %x : tensor<4x8xi32> -> tensor<4x8xi32>
  // CHECK-NEXT: func.return %r : tensor<4x8xi32>
  func.return %r : tensor<4x8xi32>
}

// CHECK-LABEL: func.func @expm1(
func.func @expm1(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.expm1 %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.expm1 %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @cumprod(
func.func @cumprod(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.cumprod %x dim = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.cumprod %x dim = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @prod(
func.func @prod(%x: tensor<4x8xi32>) -> tensor<4xi32> {
  // CHECK-NEXT: %r = fusion.prod %x dim = 1 : tensor<4x8xi32> -> tensor<4xi32>
  %r = fusion.prod %x dim = 1 : tensor<4x8xi32> -> tensor<4xi32>
  // CHECK-NEXT: func.return %r : tensor<4xi32>
  func.return %r : tensor<4xi32>
}
