// A malformed pipeline fails before any input is read, with one line that names the pass and the
// option; the exit status is 1 (tests/test_hir_opt.py checks the status of each case).
// RUN: not hir-opt %s -p cse,no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not hir-opt %s -p strem-lowering 2>&1 | filecheck %s --check-prefix=CLOSE
// RUN: not hir-opt %s -p 'stream-lowering{policy=resharding-only,backend=copy-engine}' 2>&1 | filecheck %s --check-prefix=COMMA
// RUN: not hir-opt %s -p 'stream-lowering{chunks=x}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not hir-opt %s -p 'stream-lowering{chunks}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not hir-opt %s -p 'stream-lowering{nope=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not hir-opt %s -p 'cse{bogus=1}' 2>&1 | filecheck %s --check-prefix=NO-OPTIONS
// RUN: not hir-opt %s -p 'cse{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not hir-opt %s -p 'cse,,dce' 2>&1 | filecheck %s --check-prefix=EMPTY
// A pass flag after a bad -p does not hide the error.
// RUN: not hir-opt %s -p 'cse{' --dce 2>&1 | filecheck %s --check-prefix=SYNTAX

// PASS:      hir-opt: error: unknown pass 'no-such-pass' (available passes: canonicalize, cse, dce, {{.*}}, stream-lowering)
// PASS-NOT:  {{.}}
// CLOSE:     hir-opt: error: unknown pass 'strem-lowering'; did you mean 'stream-lowering'? (available passes:
// COMMA:     hir-opt: error: malformed pass pipeline 'stream-lowering{policy=resharding-only,backend=copy-engine}' at column 47 (in the options of 'stream-lowering', after option 'policy'): {{.*}}; options are separated by spaces, not commas: 'stream-lowering{policy=resharding-only backend=copy-engine}'
// COMMA-NOT: {{.}}
// TYPE:      hir-opt: error: option 'chunks' of pass 'stream-lowering' expects int, got 'x'
// TYPE-NOT:  {{.}}
// VALUE:     hir-opt: error: option 'chunks' of pass 'stream-lowering' needs a value: chunks=<int>
// OPTION:    hir-opt: error: pass 'stream-lowering' has no option 'nope' (its options: policy: str = standalone-host-ops, backend: str = nccl, chunks: int = 0, release: str = auto, intermediates: str = ring, comm-priority: str = normal, join: str = caller, overlap: str = always, propagate-sharding: bool = false)
// OPTION-NOT: {{.}}
// NO-OPTIONS: hir-opt: error: pass 'cse' has no option 'bogus' (it has no options)
// SYNTAX:    hir-opt: error: malformed pass pipeline 'cse{' at column 5 (in the options of 'cse'): expected argument name
// SYNTAX-NOT: {{.}}
// EMPTY:     hir-opt: error: malformed pass pipeline 'cse,,dce' at column 5: expected pass name
func.func @f() {
  func.return
}
