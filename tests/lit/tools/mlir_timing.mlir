// --mlir-timing prints mlir-opt's execution time table on stderr: by default one row per name,
// slowest first, the passes that ran and not the pipeline pass around them (the rows add up); --mlir-timing-display=tree nests a pipeline pass's stages under it, in the order
// they ran. stdout holds only the IR.
// RUN: hir-opt %s -p cse --stream-lowering --mlir-timing 2>%t.list >%t.mlir
// RUN: filecheck %s --input-file %t.list
// RUN: filecheck %s --input-file %t.list --check-prefix=LEAVES
// RUN: hir-opt %t.mlir | filecheck %s --check-prefix=IR
// RUN: hir-opt %s -p cse --stream-lowering --mlir-timing --mlir-timing-display=tree 2>&1 >/dev/null | filecheck %s --check-prefix=TREE
// RUN: not hir-opt %s --mlir-timing-display=flat 2>&1 | filecheck %s --check-prefix=DISPLAY

// CHECK:      ===-------------------------------------------------------------------------===
// CHECK-NEXT:                          ... Execution time report ...
// CHECK-NEXT: ===-------------------------------------------------------------------------===
// CHECK-NEXT:   Total Execution Time: {{[0-9]+\.[0-9][0-9][0-9][0-9]}} seconds
// CHECK-EMPTY:
// CHECK-NEXT:   ----Wall Time----  ----Name----
// CHECK-DAG:    {{[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  Parser
// CHECK-DAG:    {{[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  Pipeline set-up
// CHECK-DAG:    {{[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  fusion-segment
// CHECK-DAG:    {{[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  cse
// CHECK-DAG:    {{[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  Verifier
// CHECK-DAG:    {{[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  Output
// CHECK:        {{[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  Rest
// CHECK-NEXT:   {{[0-9]+\.[0-9][0-9][0-9][0-9]}} (100.0%)  Total
// CHECK-NOT:  {{.}}

// LEAVES:      ----Wall Time----
// LEAVES-NOT:  stream-lowering
// LEAVES:      Total

// IR:         hir.launch

// TREE:       ----Wall Time----  ----Name----
// TREE-NEXT:    {{.*}}  Pipeline set-up
// TREE-NEXT:    {{.*}}  Parser
// TREE-NEXT:    {{.*}}  Verifier
// TREE-NEXT:    {{.*}}  cse
// TREE-NEXT:    {{.*}}  stream-lowering
// TREE-NEXT:    {{.*}}    fusion-stream-overlap
// TREE-NEXT:    {{.*}}    fusion-decompose-resharding
// TREE-NEXT:    {{.*}}    fusion-segment
// TREE-NEXT:    {{.*}}    convert-fusion-to-hir
// TREE-NEXT:    {{.*}}    hir-loop-fusion
// TREE-NEXT:    {{.*}}    hir-lower-communication
// TREE-NEXT:    {{.*}}    hir-sink-waits
// TREE-NEXT:    {{.*}}    hir-ring-intermediates
// TREE-NEXT:    {{.*}}    hir-expand-stream-loops
// TREE-NEXT:    {{.*}}    cse
// TREE-NEXT:    {{.*}}  Output
// TREE-NEXT:    {{.*}}  Rest
// TREE-NEXT:    {{.*}}  Total

// DISPLAY:    hir-opt: error: argument --mlir-timing-display: invalid choice: 'flat' (choose from 'list', 'tree')
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %0 = fusion.set %arg0 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %0 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
