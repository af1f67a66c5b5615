"""
Mutation testing of the poisoned allocations (runtime/poison.py; tests/test_poison.py): the
lowered programs of the test corpus (tests/race_mutants.py's), each with one `hir.launch` deleted
(one mutant per launch: a buffer it wrote is now never written), run with poisoned allocations and
compared with the fusion-level reference on random inputs. A mutant is *killed* when the results
differ. The programs as lowered must match. On several ranks each rank compares the outputs it
holds (an output whose mesh leaves a rank out is None there) and the ranks agree on one verdict: a
mutant is killed when any rank sees a difference.

    python tests/poison_mutants.py                                   # single-device corpus
    python -m torch.distributed.run --nproc-per-node 2 tests/poison_mutants.py --multidevice

Prints one line per program and mutant (`ORIGINAL name verdict`, `MUTANT name verdict`) and a
summary, on rank 0.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from race_mutants import PIPELINES, Lowered, _parsed, corpus, mutants, report

MUTATED_OPS = ("hir.launch",)
_runs = iter(range(1 << 30))
"""A new seed for each run: a symmetric buffer keeps what an earlier run left in it (it is poisoned
when it is made, not at every run), and with the same inputs that would be the right answer."""


def references(multidevice: bool = False) -> dict[str, Any]:
    """Source name -> its fusion-level module, for the reference runs (of the corpus `corpus(multidevice)` lowers)."""
    return {name: module for name, _, module in _parsed(multidevice)}


_compiled_references: dict[tuple[int, str], Any] = {}


def _reference_program(reference: Any, entry: str) -> Any:
    """The fusion-level reference compiled once per function (every mutant of its lowerings runs it on new inputs)."""
    import hir

    key = (id(reference), entry)  # the modules of `references()` live as long as the process
    if key not in _compiled_references:
        _compiled_references[key] = hir.compile_program(reference, entry)
    return _compiled_references[key]


def verdict(lowered: Any, reference: Any, entry: str, session: Any | None) -> str:
    """'match', 'differs: ...' or 'error: ...' of one poisoned run against the reference."""
    import hir
    from hir.runtime.compare import mismatches
    from hir.runtime.inputs import random_inputs

    program = hir.compile_program(lowered, entry)
    program.poison = True
    expected_program = _reference_program(reference, entry)
    inputs = random_inputs(program.global_input_types, seed=next(_runs))
    try:
        if session is None:
            got = program(inputs, num_streams=2)
            want = expected_program(inputs)
        else:
            got = session.run(program, inputs, num_streams=2)
            want = session.run_reference(expected_program, inputs)
    except Exception as err:
        return _agreed(f"error: {str(err).splitlines()[0] if str(err) else type(err).__name__}", session)
    # Each rank compares the outputs it holds (None: its mesh leaves this rank out).
    found = [
        f"output #{k}" + problem.removeprefix("output #0")
        for k, (out, ref) in enumerate(zip(got, want))
        if out is not None
        for problem in mismatches([out], [ref])
    ]
    return _agreed(f"differs: {found[0]}" if found else "match", session)


def _agreed(mine: str, session: Any | None) -> str:
    """The verdict of the job: 'match' when every rank says so, else the first rank's other verdict."""
    if session is None:
        return mine
    import torch.distributed as dist

    verdicts: list[Any] = [None] * session.world_size
    dist.all_gather_object(verdicts, mine)
    return next((f"{v} (rank {r})" for r, v in enumerate(verdicts) if v != "match"), "match")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--multidevice", action="store_true", help="the multi-device corpus (run under torchrun)")
    parser.add_argument(
        "--pipelines",
        default=",".join(PIPELINES),
        help=f"comma list of the lowerings of the multi-device corpus (default: all), of: {', '.join(PIPELINES)}",
    )
    args = parser.parse_args(argv)
    backends = tuple(args.pipelines.split(","))
    unknown = [b for b in backends if b not in PIPELINES]
    if unknown:
        parser.error(f"unknown pipelines {', '.join(unknown)}")
    session = None
    if args.multidevice:
        from hir.runtime.distributed import Session

        os.environ["HIR_POISON"] = "1"  # this rank's symmetric buffers too (made by the communicator)
        session = Session.from_environment("cpu")
    sources = references(args.multidevice)
    programs = corpus(args.multidevice, backends)

    def run(lowered: Lowered, module: Any) -> str:
        return verdict(module, sources[lowered.name.rsplit(":", 1)[0]], lowered.entry, session)

    originals = [(p.name, run(p, p.module)) for p in programs]
    results = []
    for mutant in mutants(programs, MUTATED_OPS):
        with mutant.applied() as module:
            results.append((mutant.name, run(mutant.program, module)))
    report(originals, results, lambda result: not result.startswith("match"), session)
    return 0


if __name__ == "__main__":
    sys.exit(main())
