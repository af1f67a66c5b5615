"""
SPMD driver for tests/test_multidevice_ir_round.py: every rank of a 3-process gloo job runs it.

    python tests/multidevice_ir_round_driver.py MODULE.mlir...

Each fusion-level MODULE is lowered with the nccl backend, with and without
`propagate-sharding=true`, run with 1 and 2 streams (race-checked) on this rank's shards of
seeded random inputs, and compared with the fusion-level reference on the devices of each
output's mesh. Rank 0 prints one line per case, `CASE module/pipeline/streams=N OK` or `FAIL`
with every rank's problem.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch.distributed as dist

import hir
from hir.dialects.parallel_encoding import layout_of
from hir.runtime.compare import mismatches
from hir.runtime.distributed import Session
from hir.runtime.inputs import random_inputs

PIPELINES = {"nccl": "stream-lowering", "propagate": "stream-lowering{propagate-sharding=true}"}
NUM_STREAMS = (1, 2)


def check(session: Session, path: str) -> list[tuple[str, str | None]]:
    cases: list[tuple[str, str | None]] = []
    reference = hir.compile_program(hir.parse_file(path))
    inputs = random_inputs(reference.input_types, seed=0)
    expected = session.run_reference(reference, inputs)
    for name, pipeline in PIPELINES.items():
        case = f"{Path(path).stem}/{name}"
        try:
            program = hir.compile_program(hir.run_pipeline(hir.parse_file(path), pipeline), race_check=True)
        except Exception as err:  # the same on every rank: nothing ran yet
            cases += [(f"{case}/streams={n}", f"lowering: {type(err).__name__}: {err}") for n in NUM_STREAMS]
            continue
        # An output means something only on the devices of its mesh (the others run the program too).
        mine = [
            k
            for k, t in enumerate(program.global_output_types)
            if session.rank in (layout_of(t).mesh or [session.rank])
        ]
        for n in NUM_STREAMS:
            try:
                outputs = session.run(program, inputs, num_streams=n)
                problems = mismatches([outputs[k].cpu() for k in mine], [expected[k].cpu() for k in mine])
            except Exception as err:  # reported, then the next case runs (a rank that hangs hits the timeout)
                problems = [f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"]
            cases.append((f"{case}/streams={n}", "; ".join(problems) or None))
    return cases


def main() -> None:
    session = Session.from_environment("cpu")
    for path in sys.argv[1:]:
        cases = check(session, path)
        per_rank: list[list[tuple[str, str | None]] | None] = [None] * session.world_size
        dist.all_gather_object(per_rank, cases)
        if session.is_main:
            for k, (name, _) in enumerate(cases):
                problems = [f"rank {r}: {seen[k][1]}" for r, seen in enumerate(per_rank) if seen and seen[k][1]]
                print(f"CASE {name} " + (f"FAIL {' | '.join(problems)}" if problems else "OK"), flush=True)
    session.close()


if __name__ == "__main__":
    main()
