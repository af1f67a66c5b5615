"""
SPMD driver for tests/test_distributed.py: every rank of a torchrun job runs it.

    python -m torch.distributed.run --nproc-per-node 2 tests/distributed_driver.py MODULE.mlir...

For each fusion-level MODULE and each pipeline (`--pipelines`, default: the nccl and copy-engine
backends): lower it, run the lowered program with
`Session` (each rank gets its shards of seeded random global inputs, outputs are gathered back)
with num_streams 1 and 3, and compare with the reference (the fusion-level module on the
unsharded inputs) on the devices of each output's mesh (on the others the output's buffer
carries no meaning: they run the program too, SPMD). A job of one process (modules on the mesh
[0]) runs each case without a communicator and over a gloo process group of one
(`ranks.sessions_of_the_job`). Rank 0 prints one line per case, a case failing when any rank saw a problem:

    CASE ag_matmul/nccl/streams=1 OK
    CASE ag_matmul/copy-engine/streams=3 FAIL rank 1: output #0: Mismatched elements: 2048 / 8192 (25.0%); Greatest absolute difference: ...

`--fail-rank R`: rank R raises before the first collective while the others enter it (the job
must then fail, not hang). `--device cuda` runs on one GPU per rank (NCCL).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch.distributed as dist
from ranks import close_sessions, sessions_of_the_job

import hir
from hir.dialects.parallel_encoding import layout_of
from hir.runtime.compare import mismatches
from hir.runtime.device import DEVICE_KINDS
from hir.runtime.distributed import Session
from hir.runtime.inputs import random_inputs

NUM_STREAMS = (1, 3)
# Both communication backends (the copy-engine one runs on CPU over shared memory), and the
# variants of the copy-engine one and the ring backend that `--pipelines` can name.
PIPELINES = {
    "nccl": "stream-lowering",
    "copy-engine": "stream-lowering{backend=copy-engine chunks=2}",
    "copy-engine-auto": "stream-lowering{backend=copy-engine}",
    "copy-engine-start": "stream-lowering{backend=copy-engine release=start}",
    "copy-engine-end": "stream-lowering{backend=copy-engine release=end}",
    "propagate": "stream-lowering{propagate-sharding=true}",
    "ring": "stream-lowering{backend=ring}",
    # Weight gradients and other independent work moved after the collectives (hir.compile's order).
    "nccl-hidden": "fusion-hide-communication,stream-lowering",
    "copy-engine-hidden": "fusion-hide-communication,stream-lowering{backend=copy-engine}",
    # The serial form, the cost model's choice and the copy-engine pipeline by shard (fusion-stream-overlap).
    "never": "stream-lowering{overlap=never}",
    "auto": "stream-lowering{overlap=auto}",
    "by-shard": "stream-lowering{backend=copy-engine overlap=by-shard}",
}
DEFAULT_PIPELINES = ("nccl", "copy-engine")


def check_module(
    sessions: list[Session], path: str, fail_rank: int | None, pipelines: tuple[str, ...] = DEFAULT_PIPELINES
) -> list[tuple[str, str | None]]:
    """(case name, problem or None) for each pipeline and number of streams, run in each of `sessions`."""
    cases: list[tuple[str, str | None]] = []
    reference: tuple[Any, list[Any]] | None = None  # the module's reference program and inputs, made once
    expected: list[Any] | None = None  # its outputs, computed once (every pipeline compares with them)
    for backend in pipelines:
        name = f"{Path(path).stem}/{backend}"
        try:
            if reference is None:
                program = hir.compile_program(hir.parse_file(path))
                reference = (program, random_inputs(program.input_types, seed=0))
            lowered = hir.compile_program(hir.run_pipeline(hir.parse_file(path), PIPELINES[backend]), race_check=True)
        except Exception as err:  # the same on every rank: nothing ran yet
            cases += [(f"{name}/streams={n}", f"lowering: {type(err).__name__}: {err}") for n in NUM_STREAMS]
            continue
        if fail_rank == sessions[0].rank:
            raise RuntimeError(f"rank {sessions[0].rank} fails on purpose before the collectives of {name}")
        if expected is None:
            expected = sessions[0].run_reference(*reference)
        cases += check_lowering(sessions, name, lowered, reference[1], expected)
    return cases


def check_lowering(
    sessions: list[Session], name: str, program: Any, inputs: list[Any], expected: list[Any]
) -> list[tuple[str, str | None]]:
    """The cases of one lowered `program`, run with each number of streams against the reference's `expected`."""
    session = sessions[0]
    # An output means something only on the devices of its mesh (the others run the program too).
    mine = [
        k for k, t in enumerate(program.global_output_types) if session.rank in (layout_of(t).mesh or [session.rank])
    ]
    cases: list[tuple[str, str | None]] = []
    for n in NUM_STREAMS:
        problems: list[str] = []
        for run_in in sessions:
            try:
                outputs = run_in.run(program, inputs, num_streams=n)
                problems += mismatches([outputs[k].cpu() for k in mine], [expected[k].cpu() for k in mine])
            except Exception as err:  # reported, then the next case runs (a rank that hangs hits the timeout)
                problems.append(f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
        cases.append((f"{name}/streams={n}", "; ".join(problems) or None))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+", help="fusion-level .mlir modules")
    parser.add_argument("--device", choices=tuple(DEVICE_KINDS), default="cpu")
    parser.add_argument("--fail-rank", type=int, default=None, help="this rank raises before the first collective")
    parser.add_argument(
        "--pipelines",
        default=",".join(DEFAULT_PIPELINES),
        help=f"comma list of the lowerings to check, of: {', '.join(PIPELINES)}",
    )
    args = parser.parse_args()
    pipelines = tuple(args.pipelines.split(","))
    unknown = [p for p in pipelines if p not in PIPELINES]
    if unknown:
        parser.error(f"unknown pipelines {', '.join(unknown)}")

    session = Session.from_environment(args.device)
    sessions = sessions_of_the_job(session)
    for path in args.modules:
        cases = check_module(sessions, path, args.fail_rank, pipelines)
        per_rank: list[list[tuple[str, str | None]] | None] = [cases]
        if session.world_size > 1:
            per_rank *= session.world_size
            dist.all_gather_object(per_rank, cases)
        if session.is_main:
            for k, (name, _) in enumerate(cases):
                problems = [f"rank {r}: {seen[k][1]}" for r, seen in enumerate(per_rank) if seen and seen[k][1]]
                print(f"CASE {name} " + (f"FAIL {' | '.join(problems)}" if problems else "OK"), flush=True)
    close_sessions(sessions)


if __name__ == "__main__":
    main()
