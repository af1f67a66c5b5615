// --list-passes prints every pass with a one-line description and its options (type = default, and
// the allowed values of a string option, from the pass's declaration); a pipeline pass also lists its stages.
// RUN: hir-opt --list-passes | filecheck %s

// CHECK:      Passes (-p 'name{option=value ...},name', or --name to append one without options):
// CHECK-NEXT:   canonicalize {{ +}}Applies all canonicalization patterns.
// CHECK-NEXT:   cse {{ +}}Eliminates common subexpressions.
// CHECK-NEXT:   dce {{ +}}Erases operations
// CHECK:        fusion-propagate-sharding {{ +}}Gives unannotated tensors the device sharding (didx axis, mesh) of their neighbours.
// CHECK-NEXT:       traversal: str = forward-backward (one of: forward, backward, forward-backward, backward-forward)
// CHECK-NEXT:   fusion-stream-overlap {{ +}}Decides whether stream axes are pipelined: as written, never, or as the cost model says.
// CHECK-NEXT:       overlap: str = always (one of: always, auto, never
// CHECK-NEXT:       backend: str = nccl (one of: nccl, copy-engine, ring)
// CHECK:        fusion-hide-communication {{ +}}Moves work that no communication waits for to just after a communication
// CHECK-NEXT:   fusion-decompose-resharding
// CHECK-NEXT:   fusion-segment {{ +}}Groups fusion ops into segments (kernels).
// CHECK-NEXT:       policy: str = standalone-host-ops (one of: standalone-host-ops, resharding-only
// CHECK:        hir-lower-communication {{ +}}Resharding launches become collectives
// CHECK-NEXT:       backend: str = nccl
// CHECK-NEXT:       chunks: int = 0
// CHECK-NEXT:       release: str = auto (one of: auto, end, start)
// CHECK-NEXT:       comm-priority: str = normal (one of: normal, high)
// CHECK-NEXT:   hir-sink-waits {{ +}}Moves each `hir.wait` (and each pipeline's join) past the launches
// CHECK-NEXT:   hir-ring-intermediates {{ +}}Allocates each intermediate that lives inside one iteration
// CHECK-NEXT:   hir-expand-stream-loops {{ +}}Lowers every `hir.stream_for`
// CHECK-NEXT:       join: str = caller (one of: caller, chain)
// CHECK-NEXT:   stream-lowering {{ +}}Lowers fusion IR to an executable hir program.
// CHECK-NEXT:       policy: str = standalone-host-ops
// CHECK-NEXT:       backend: str = nccl
// CHECK-NEXT:       chunks: int = 0{{$}}
// CHECK-NEXT:       release: str = auto
// CHECK-NEXT:       intermediates: str = ring (one of: ring, whole)
// CHECK-NEXT:       comm-priority: str = normal
// CHECK-NEXT:       join: str = caller
// CHECK-NEXT:       overlap: str = always
// CHECK-NEXT:       propagate-sharding: bool = false
// CHECK-NEXT:       stages: fusion-stream-overlap, fusion-decompose-resharding, fusion-segment, convert-fusion-to-hir, hir-loop-fusion, hir-lower-communication, hir-sink-waits, hir-ring-intermediates, hir-expand-stream-loops, cse
