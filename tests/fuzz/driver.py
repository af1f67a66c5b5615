"""
SPMD job of the multi-device fuzzer (tests/test_fuzz_multidevice.py): every rank of a torchrun job
runs it, and it checks a whole batch of programs, since starting a job costs seconds.

    python -m torch.distributed.run --nproc-per-node 2 tests/fuzz/driver.py cases.json
    python -m torch.distributed.run --nproc-per-node 2 tests/fuzz/driver.py repro.mlir \\
        --pipeline 'stream-lowering{backend=copy-engine chunks=2}' --num-streams 3 --seed 7 [--may-reject]

`cases.json` is a list of `{"name", "text", "pipeline", "num_streams", "seed", "may_reject"}`. For
each case rank 0 parses the fusion-level program, runs it on the global inputs (the reference),
lowers it with the pipeline, prints the lowered module and parses it back (the text must parse,
verify and print the same), and sends the text, the inputs and the reference to every rank (one
lowering per case, not one per rank). Every rank then runs the printed lowered program
race-checked on its shards (`Session.run`: inputs sharded by their types, sharded outputs
gathered back) and compares each output on the ranks of the mesh it lives on. A job of one
process (a mesh of one device, `mesh = [0]`; `python tests/fuzz/driver.py ...` alone works too)
runs each program twice: without a communicator, as hir-run on one process does, and over a gloo
process group of one, as a program compiled under `torchrun --nproc-per-node 1` does. Rank 0
prints `START <name>` before a case and one line after it:

    CASE <name> OK [features]
    CASE <name> REFUSED <diagnostic>          (only for may_reject programs)
    CASE <name> SKIPPED <why>                 (the lowered program needs fewer processes than the job)
    CASE <name> FAIL rank 1: output #0: Mismatched elements: ...

A run that raises on a rank may leave its peers inside a collective: that rank prints
`CASE <name> CRASH rank R: ...` and ends the job at once (torchrun then stops the others), so
the job never hangs and the parent names the program from the START line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch.distributed as dist
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ranks import close_sessions, sessions_of_the_job

import hir
from fuzz.check import program_tolerance, round_trip
from hir.dialects import fusion
from hir.dialects import hir as hir_ops
from hir.dialects import shape_rules as rules
from hir.dialects.parallel_encoding import layout_of
from hir.runtime.compare import EXACT, Tolerance, mismatches
from hir.runtime.distributed import Session
from hir.runtime.inputs import random_inputs


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    pipeline: str = "stream-lowering"
    num_streams: int = 3
    seed: int = 0
    may_reject: bool = False

    def command_line(self, world_size: int) -> str:
        return (
            f"python -m torch.distributed.run --nproc-per-node {world_size} tests/fuzz/driver.py repro.mlir "
            f"--pipeline '{self.pipeline}' --num-streams {self.num_streams} --seed {self.seed}"
            + (" --may-reject" if self.may_reject else "")
        )


def write_cases(path: Path, cases: list[Case]) -> None:
    path.write_text(json.dumps([asdict(c) for c in cases]))


def valid_ranks(function: func.FuncOp) -> list[frozenset[int] | None]:
    """
    Per returned value, the ranks on which it means something (None: all): its mesh, or for a
    value without one, the meshes of the values it is computed from.
    """
    valid: dict[object, frozenset[int] | None] = {}

    def own(t: object) -> frozenset[int] | None:
        mesh = layout_of(t).mesh if isinstance(t, TensorType) else ()
        return frozenset(mesh) if mesh else None

    for arg in function.body.block.args:
        valid[arg] = own(arg.type)
    for op in function.body.block.ops:
        for result in op.results:
            ranks = own(result.type)
            if ranks is None:
                for operand in op.operands:
                    if (seen := valid.get(operand)) is not None:
                        ranks = seen if ranks is None else ranks & seen
            valid[result] = ranks
    terminator = function.body.block.last_op
    assert isinstance(terminator, func.ReturnOp)
    return [valid[v] for v in terminator.arguments]


def features(fusion_module: ModuleOp, lowered: ModuleOp) -> list[str]:
    """The communication the lowered program does (for the coverage statistics of the test)."""
    found: set[str] = set()
    for op in lowered.walk():
        if isinstance(op, hir_ops.BroadcastOp):
            found.add("broadcast" if isinstance(op.root.owner, arith.ConstantOp) else "broadcast-by-shard")
        elif isinstance(op, hir_ops.CommunicationOp):
            found.add(op.name.removeprefix("hir."))
        elif isinstance(op, hir_ops.PeerViewOp):
            found.add("copy-engine-push")
        elif isinstance(op, hir_ops.ForOp):
            body = list(op.body.block.walk())
            computes = any(isinstance(o, fusion.MatmulOp | fusion.LinearOp) for o in body)
            communicates = any(isinstance(o, hir_ops.CommunicationOp | hir_ops.PeerViewOp) for o in body)
            if computes and communicates:
                found.add("matmul-and-communication-in-one-loop")
    for op in fusion_module.walk():
        if isinstance(op, fusion.SumOp) and isinstance(op.x.owner, fusion.MatmulOp | fusion.LinearOp):
            didx = layout_of(op.x.type).didx_axis
            if didx is not None and didx in op.dims.get_values():
                found.add("matmul-then-sum-over-didx")
        found |= shape_features(op)
    return sorted(found)


def shape_features(op: Operation) -> set[str]:
    """
    What a fusion-level op does with its shardings: a didx axis moved to another axis
    (`moved-didx`), an extent-1 axis broadcast into a didx axis (`broadcast-into-didx`), a set onto
    another mesh (`mesh-change`), a didx axis whose extent is not its mesh's size (`uneven`).
    """
    found: set[str] = set()
    if not op.name.startswith("fusion.") or len(op.results) != 1 or not isinstance(op.results[0].type, TensorType):
        return found
    result = layout_of(op.results[0].type)
    shape = op.results[0].type.get_shape()
    operands = [v.type for v in op.operands if isinstance(v.type, TensorType)]
    for t in (*operands, op.results[0].type):
        layout = layout_of(t)
        if layout.didx_axis is not None and layout.mesh and t.get_shape()[layout.didx_axis] != len(layout.mesh):
            found.add("uneven")
    if isinstance(op, fusion.SetOp):
        source = layout_of(operands[0]).mesh
        if source and result.mesh and tuple(source) != tuple(result.mesh):
            found.add("mesh-change")
    axis_map = getattr(op, "axis_map", None)
    if axis_map is None or result.didx_axis is None or len(operands) != len(op.operands):
        return found
    try:
        axis_map = axis_map()
    except Exception:
        return found
    for k, t in enumerate(operands):
        didx = layout_of(t).didx_axis
        if didx is not None and not isinstance(op, fusion.SumOp | fusion.SetOp):
            if rules.operand_axis_to_result_axis(axis_map, k, didx) not in (None, result.didx_axis):
                found.add("moved-didx")
    for k, a in axis_map[result.didx_axis]:
        if operands[k].get_shape()[a] == 1 and shape[result.didx_axis] != 1:
            found.add("broadcast-into-didx")
    return found


def propagates(text: str) -> bool:
    """Whether fusion-propagate-sharding gives some value of the program a sharding."""
    return str(hir.run_pipeline(hir.parse(text), "fusion-propagate-sharding")) != str(hir.parse(text))


@dataclass
class Prepared:
    """What rank 0 sends every rank for a case: the printed lowered IR, the inputs and the reference."""

    verdict: str | None = None
    """Set when there is nothing to run: `REFUSED ...` or a failure."""
    lowered: str = ""
    inputs: list[Any] = field(default_factory=list)
    expected: list[Any] = field(default_factory=list)
    valid: list[frozenset[int] | None] = field(default_factory=list)
    tolerance: Tolerance = EXACT
    features: list[str] = field(default_factory=list)


def prepare(case: Case) -> tuple[Prepared, ModuleOp | None]:
    """On rank 0: parse, run the reference, lower, print and re-parse (the text must round-trip)."""
    try:
        module = hir.parse(case.text, f"{case.name}.mlir")
        reference = hir.compile_program(module)
        inputs = random_inputs(reference.input_types, case.seed)
        expected = reference(inputs)
    except Exception as err:
        return Prepared(f"FAIL the program or its reference: {type(err).__name__}: {err}"), None
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    try:
        lowered = hir.run_pipeline(hir.parse(case.text, f"{case.name}.mlir"), case.pipeline)
    except PassFailedException as err:
        first = str(err).splitlines()[0] if str(err) else ""
        return Prepared(f"REFUSED {first}" if case.may_reject else f"FAIL stream-lowering refused it: {first}"), None
    except Exception as err:
        return Prepared(f"FAIL stream-lowering crashed: {type(err).__name__}: {err}"), None
    try:
        printed, reparsed = round_trip(lowered, f"{case.name}.lowered.mlir")
    except Exception as err:
        return Prepared(f"FAIL the printed lowered IR does not round-trip: {type(err).__name__}: {err}"), None
    found = features(module, lowered)
    if "propagate-sharding=true" in case.pipeline and propagates(case.text):
        found = sorted([*found, "propagated-sharding"])
    prepared = Prepared(None, printed, inputs, expected, valid_ranks(function), program_tolerance(module), found)
    return prepared, reparsed


def check_case(sessions: list[Session], case: Case) -> tuple[str, list[str]]:
    """
    This rank's verdict (`OK`, `REFUSED ...` or a problem) and the features. Rank 0 lowers the
    program and every rank runs the printed lowered IR in each of `sessions`; raises only from a run.
    """
    session = sessions[0]
    shared: list[Any] = [None]
    module = None
    if session.is_main:
        shared[0], module = prepare(case)
    if session.world_size > 1:
        dist.broadcast_object_list(shared, src=0)
    prepared: Prepared = shared[0]
    if prepared.verdict is not None:
        return prepared.verdict, []
    if module is None:
        module = hir.parse(prepared.lowered, f"{case.name}.lowered.mlir")
    program = hir.compile_program(module, race_check=True)
    if program.device_ids and program.processes != session.world_size:
        # Session.run refuses a job larger than the program's devices (a program whose values all
        # live on device 0, say): the same verdict on every rank, nothing run.
        return f"SKIPPED the lowered program runs on {program.processes} processes", []
    problems = []
    for run_in in sessions:
        problems += compare(run_in, program, prepared, case.num_streams)
    return ("FAIL " + "; ".join(problems) if problems else "OK"), prepared.features


def compare(session: Session, program: Any, prepared: Prepared, num_streams: int) -> list[str]:
    """The differences from the reference of the outputs this rank holds, after a run in `session`."""
    outputs = session.run(program, prepared.inputs, num_streams=num_streams)  # an exception here ends the job
    how = ""
    if session.world_size == 1:
        how = " (without a communicator)" if session.communicator is None else " (in a process group of one)"
    problems = []
    for k, (out, ref, valid) in enumerate(zip(outputs, prepared.expected, prepared.valid)):
        if valid is not None and session.rank not in valid:
            continue  # this rank holds no part of the value: its buffer means nothing
        problems += [
            f"output #{k}" + p.removeprefix("output #0") + how
            for p in mismatches([out.cpu()], [ref.cpu()], prepared.tolerance)
        ]
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", help="a cases.json batch, or one fusion-level .mlir program")
    parser.add_argument("--pipeline", default="stream-lowering", help="for a .mlir program")
    parser.add_argument("--num-streams", type=int, default=3, help="for a .mlir program")
    parser.add_argument("--seed", type=int, default=0, help="for a .mlir program: seed of the random inputs")
    parser.add_argument("--may-reject", action="store_true", help="for a .mlir program: a diagnosed refusal is fine")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    path = Path(args.cases)
    if path.suffix == ".json":
        cases = [Case(**c) for c in json.loads(path.read_text())]
    else:
        cases = [Case(path.stem, path.read_text(), args.pipeline, args.num_streams, args.seed, args.may_reject)]

    session = Session.from_environment(args.device)
    sessions = sessions_of_the_job(session)
    for case in cases:
        if session.is_main:
            print(f"START {case.name}", flush=True)
        try:
            verdict, found = check_case(sessions, case)
        except Exception as err:
            message = f"{type(err).__name__}: {err}".replace("\n", " | ")
            print(f"CASE {case.name} CRASH rank {session.rank}: {message}", flush=True)
            traceback.print_exc()
            sys.stdout.flush()
            os._exit(3)
        verdicts: list[tuple[str, list[str]] | None] = [(verdict, found)]
        if session.world_size > 1:
            verdicts *= session.world_size
            dist.all_gather_object(verdicts, (verdict, found))
        if session.is_main:
            failed = [
                f"rank {r}: {v[0].removeprefix('FAIL ')}"
                for r, v in enumerate(verdicts)
                if v and v[0].startswith("FAIL")
            ]
            line = f"FAIL {' | '.join(failed)}" if failed else f"{verdict} {','.join(found)}".rstrip()
            print(f"CASE {case.name} {line}", flush=True)
    close_sessions(sessions)


if __name__ == "__main__":
    main()
