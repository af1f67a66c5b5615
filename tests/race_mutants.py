"""
Mutation testing of the race checker (tests/test_race_mutations.py): the lowered programs of the
test corpus, each with one `hir.synchronize`, `hir.wait` or `hir.barrier` deleted (one mutant per op), run with
the race checker. A mutant is *killed* when a run reports a race. The programs as lowered must
run without one.

    python tests/race_mutants.py                                   # single-device corpus
    python tests/race_mutants.py --ops hir.set_current_stream      # what deleting a stream switch does
    python -m torch.distributed.run --nproc-per-node 2 tests/race_mutants.py --multidevice

The corpus: every fusion-level function of examples/ and tests/lit/ (each `// -----` part of a
split-input-file test) that parses, verifies, has small static input shapes (`MAX_INPUT_ELEMENTS`)
that draws no random numbers (its results differ run to run)
and that stream-lowering accepts, lowered with each communication backend (`PIPELINES`; a module
without a mesh comes out the same with each and is lowered once). Functions that communicate (any
op with a mesh, or arguments or results sharded over one; those on devices 0 and 1,
`MULTIDEVICE_RANKS`) need one process per device and form the multi-device corpus, run on 2
ranks; those on the mesh [0] alone run on one process and join the single-device corpus.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, ModuleOp, TensorType

REPO = Path(__file__).resolve().parent.parent
CORPUS_DIRS = (REPO / "examples", REPO / "tests" / "lit")
PIPELINES = {
    "nccl": "stream-lowering",
    "copy-engine": "stream-lowering{backend=copy-engine}",
    "copy-engine-chunks": "stream-lowering{backend=copy-engine chunks=2}",
    "copy-engine-start": "stream-lowering{backend=copy-engine release=start}",
    "copy-engine-end": "stream-lowering{backend=copy-engine release=end}",
    "copy-engine-by-shard": "stream-lowering{backend=copy-engine overlap=by-shard}",
    "ring": "stream-lowering{backend=ring}",
}
MUTATED_OPS = ("hir.synchronize", "hir.wait", "hir.barrier")
MAX_INPUT_ELEMENTS = 1 << 16
"""Functions with a larger input are left out (a test that pins a choice at a benchmark's sizes): too slow on CPU."""
MULTIDEVICE_RANKS = 2
"""The multi-device corpus runs on this many ranks: programs whose meshes need more are left out."""
NUM_STREAMS = (2, 3, 1)
"""A mutant is killed when any of these runs reports a race."""
NUM_STREAMS_ORIGINAL = (1, 2, 3, 4, 8)
"""The programs as lowered must run without a race with each of these."""


@dataclass(frozen=True)
class Lowered:
    """One lowered function of the corpus."""

    name: str
    """`path[#part]:function/backend`, e.g. `examples/set_stream.mlir:main/nccl`."""
    module: ModuleOp
    entry: str
    multidevice: bool

    @property
    def function(self) -> func.FuncOp:
        return next(op for op in self.module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == self.entry)


@dataclass(frozen=True)
class Mutant:
    program: Lowered
    op_name: str
    index: int
    """Which op of that name in the function, in walk order."""

    @property
    def name(self) -> str:
        return f"{self.program.name}/{self.op_name}#{self.index}"

    @contextmanager
    def applied(self) -> Iterator[ModuleOp]:
        """The program's module with the op deleted, put back afterwards (cheaper than a copy)."""
        victim = [op for op in self.program.function.walk() if op.name == self.op_name][self.index]
        block, after = victim.parent_block(), victim.next_op
        assert block is not None
        victim.detach()
        try:
            yield self.program.module
        finally:
            if after is None:
                block.add_op(victim)
            else:
                block.insert_op_before(victim, after)


def _sources() -> Iterator[tuple[str, str]]:
    """(name, text) of each module of the corpus: files, and the parts of split-input-file tests."""
    for directory in CORPUS_DIRS:
        for path in sorted(directory.rglob("*.mlir")):
            if "Output" in path.parts:
                continue
            text = path.read_text()
            name = str(path.relative_to(REPO))
            if "--split-input-file" in text or "-split-input-file" in text:
                for k, part in enumerate(text.split("// -----")):
                    yield f"{name}#{k}", part
            else:
                yield name, text


@functools.cache
def _parsed_source(name: str, text: str) -> ModuleOp | None:
    """One module of the corpus, parsed once (None: it does not parse or verify, an error test)."""
    import hir

    try:
        return hir.parse(text, name)
    except Exception:
        return None


def _parsed(multidevice: bool = False) -> tuple[tuple[str, str, ModuleOp], ...]:
    """
    The modules of the corpus that parse and verify (the others are error tests), each parsed once
    per process whichever subset asks for it (the single-device corpus, the hand-written programs and
    the references of tests/poison_mutants.py share them; the multi-device corpus parses only what
    mentions a mesh).
    """
    found = []
    for name, text in _sources():
        if "#fusion.parallel" not in text and "hir." not in text:
            continue  # neither a parallel fusion program nor a host program
        if multidevice and "mesh" not in text:
            continue
        module = _parsed_source(name, text)
        if module is not None:
            found.append((name, text, module))
    return tuple(found)


def _static_functions(module: ModuleOp, hir_level: bool) -> list[str]:
    """Functions of that level whose inputs are all buffers of static shapes (random inputs can be drawn)."""
    from hir.runtime.executor import is_hir_function

    names = []
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.body.blocks and is_hir_function(op) == hir_level:
            types = op.function_type.inputs.data
            if all(isinstance(t, TensorType | MemRefType) and DYNAMIC_INDEX not in t.get_shape() for t in types):
                if all(math.prod(t.get_shape()) <= MAX_INPUT_ELEMENTS for t in types):
                    names.append(op.sym_name.data)
    return names


def hand_written() -> list[Lowered]:
    """The hir-level functions of the corpus, written by hand, that the runtime can run."""
    from hir.runtime.executor import compile_program

    found = []
    for name, _, module in _parsed():
        for entry in _static_functions(module, hir_level=True):
            program = Lowered(f"{name}:{entry}/hand-written", module, entry, False)
            if any("mesh" in op.properties for op in program.function.walk()):
                continue  # needs one process per device
            try:
                compile_program(module, entry)
            except Exception:  # an op the runtime does not run (test.op, func.call, a resharding launch)
                continue
            found.append(program)
    return found


def _fusion_types(function: func.FuncOp) -> list[TensorType]:
    """The fusion-level types a lowered function records on its arguments and results (`fusion.type`)."""
    attrs = [*(function.arg_attrs or ()), *(function.res_attrs or ())]
    return [t for d in attrs if isinstance(t := d.data.get("fusion.type"), TensorType)]


def _draws_random_numbers(module: ModuleOp, entry: str) -> bool:
    """Whether the function draws random numbers (`fusion.random`): its results differ from run to run."""
    from hir.dialects import fusion

    function = next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == entry)
    return any(isinstance(op, fusion.RandomOp) for op in function.walk())


def corpus(multidevice: bool, backends: tuple[str, ...] = tuple(PIPELINES)) -> list[Lowered]:
    """
    The lowered functions, in a fixed order: those that communicate
    (`multidevice`) or those that do not. A function that lowers the same with several backends is
    kept once, under the first backend's name (a single-device function is lowered once). The
    multi-device corpus is lowered with `backends` (names of `PIPELINES`, all by default).
    """
    import hir
    from hir.dialects.hir import MeshOp
    from hir.dialects.parallel_encoding import layout_of

    found: list[Lowered] = []
    for name, text, module in _parsed(multidevice):
        if "#fusion.parallel" not in text:
            continue  # nothing to run in parallel
        entries = [e for e in _static_functions(module, hir_level=False) if not _draws_random_numbers(module, e)]
        pipelines = [(b, PIPELINES[b]) for b in backends] if multidevice else [("any-backend", PIPELINES["nccl"])]
        seen: set[tuple[str, str]] = set()
        new_by_backend = dict.fromkeys(PIPELINES, False)
        for backend, pipeline in pipelines if entries else ():
            if backend.startswith("copy-engine-") and "copy-engine" in backends and not new_by_backend["copy-engine"]:
                continue  # `chunks` and `release` change copy-engine transfers, and there were none
            try:
                lowered = hir.run_pipeline(module.clone(), pipeline)
            except Exception:  # a diagnosed refusal: an error test
                continue
            for entry in entries:
                program = Lowered(f"{name}:{entry}/{backend}", lowered, entry, multidevice)
                function = program.function
                meshes = [op.mesh_ids for op in function.walk() if isinstance(op, MeshOp)]
                # Arguments or results sharded over a mesh need one process per device too.
                meshes += [layout_of(t).mesh for t in _fusion_types(function) if layout_of(t).didx_axis is not None]
                key = (entry, str(function))
                # The processes the function runs on, one per device (a mesh of one device, [0],
                # runs on one process, without a communicator: the single-device corpus).
                processes = max((max(mesh) + 1 for mesh in meshes if mesh), default=0)
                if key in seen or (processes > 1) != multidevice:
                    continue
                if multidevice and processes != MULTIDEVICE_RANKS:
                    continue  # beyond the job's ranks, or on fewer devices than its ranks (refused)
                if any(list(mesh) != sorted(mesh) for mesh in meshes):
                    continue  # in an order the communicator refuses (docs/multidevice.md)
                seen.add(key)
                new_by_backend[backend] = True
                found.append(program)
    return found


def mutants(programs: list[Lowered], op_names: tuple[str, ...] = MUTATED_OPS) -> list[Mutant]:
    found = []
    for program in programs:
        for op_name in op_names:
            count = sum(op.name == op_name for op in program.function.walk())
            found += [Mutant(program, op_name, k) for k in range(count)]
    return found


def verdict(
    module: ModuleOp,
    entry: str,
    session: object | None = None,
    device: str = "cpu",
    num_streams: tuple[int, ...] = NUM_STREAMS,
) -> str:
    """'race: <message>' for the first run that reports one, 'no race', or 'error: <message>'."""
    import hir
    from hir.runtime.inputs import random_inputs

    program = hir.compile_program(module, entry, race_check=True)
    for n in num_streams:
        inputs = random_inputs(program.global_input_types, seed=0)
        try:
            if session is None:
                program([t.to(device) for t in inputs], num_streams=n, device=device)
            else:
                session.run(program, inputs, num_streams=n)  # type: ignore[attr-defined]
        except Exception as err:
            message = str(err).split("\n")[0]
            return f"race: {message}" if " race " in message else f"error: {message}"
    return "no race"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--multidevice", action="store_true", help="the multi-device corpus (run under torchrun)")
    parser.add_argument("--ops", nargs="+", default=list(MUTATED_OPS), help="ops to delete, one per mutant")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
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

        session = Session.from_environment(args.device)
    programs = corpus(args.multidevice, backends)
    cases = mutants(programs, tuple(args.ops))
    originals = [(p.name, verdict(p.module, p.entry, session, args.device, NUM_STREAMS_ORIGINAL)) for p in programs]
    results = []
    for m in cases:
        with m.applied() as module:
            results.append((m.name, verdict(module, m.program.entry, session, args.device)))
    report(originals, results, lambda result: result.startswith("race"), session)
    return 0


def report(
    originals: list[tuple[str, str]],
    results: list[tuple[str, str]],
    is_killed: Callable[[str], bool],
    session: object | None,
) -> None:
    """
    Prints `ORIGINAL name verdict` per program, `MUTANT name verdict` per mutant and the summary
    (on rank 0 of a job), then ends the job's session; tests/poison_mutants.py reports the same way.
    """
    if session is None or session.is_main:  # type: ignore[attr-defined]
        for name, result in originals:
            print(f"ORIGINAL {name} {result}", flush=True)
        for name, result in results:
            print(f"MUTANT {name} {result}", flush=True)
        killed = sum(is_killed(r) for _, r in results)
        print(f"{len(originals)} programs, {len(results)} mutants, {killed} killed", flush=True)
    if session is not None:
        import torch.distributed as dist

        dist.barrier()
        session.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main())
