// expected-error@+1 {{'builtin.module' op Operation func.func contains empty block in single-block region that expects at least a te}}
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
}
