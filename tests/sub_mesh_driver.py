"""
Outputs on a sub-mesh, on 2 gloo ranks (tests/test_sub_mesh_outputs.py): a program whose output's
mesh leaves a rank out returns None for it on that rank and the global tensor on the others, through
`Program`, `Session.run` (and `Session.to_main`, which brings it to rank 0) and `hir.compile`'s
callable; outputs held by every rank are unchanged. Every check is against eager torch on random
data. Rank 0 prints one `CASE <name> OK` or `CASE <name> FAIL ...` line per case; the job exits 1
when one fails.

    python -m torch.distributed.run --nproc-per-node 2 tests/sub_mesh_driver.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist

import hir
from hir.runtime.distributed import Session
from hir.runtime.inputs import random_inputs

SEND_RECV = Path(__file__).resolve().parent / "resharding" / "send_recv_one_device_meshes.mlir"

# Two outputs: %y moves from device 0 to device 1 (held by 1 alone), %z is sharded over both.
TWO_OUTPUTS = """
func.func @main(%x: tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [0]>>, %b: tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>)
    -> (tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [1]>>, tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) {
  %y = fusion.set %x : tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [0]>> -> tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [1]>>
  %z = fusion.relu %b : tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y, %z : tensor<1x4xf32, #fusion.parallel<[didx, serial], mesh = [1]>>, tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
"""


def _lowered(text: str, name: str, pipeline: str = "stream-lowering") -> hir.Program:
    return hir.compile_program(hir.run_pipeline(hir.parse(text, name), pipeline), race_check=True)


def session_run(session: Session) -> None:
    """`Session.run` of the send/recv: None on rank 0, the input on rank 1; `to_main` brings it to rank 0."""
    text = SEND_RECV.read_text()
    for pipeline in ("stream-lowering", "stream-lowering{backend=copy-engine}", "stream-lowering{backend=ring}"):
        program = _lowered(text, SEND_RECV.name, pipeline)
        (x,) = inputs = random_inputs(program.global_input_types, seed=3)
        assert session.holds(program) == [session.rank == 1]
        for num_streams in (1, 3):
            (y,) = session.run(program, inputs, num_streams=num_streams)
            if session.rank == 0:
                assert y is None, f"{pipeline}: rank 0 got {y!r} for an output of mesh [1]"
            else:
                torch.testing.assert_close(y, x, rtol=0, atol=0)
            (gathered,) = session.to_main(program, [y])
            if session.rank == 0:
                torch.testing.assert_close(gathered, x, rtol=0, atol=0)
            else:
                assert gathered is y


def program_call(session: Session) -> None:
    """`Program` with a communicator: None on rank 0; a preallocated output there stays untouched."""
    program = _lowered(SEND_RECV.read_text(), SEND_RECV.name)
    assert session.communicator is not None
    session.communicator.prepare(program.meshes)
    (x,) = random_inputs(program.global_input_types, seed=4)
    assert program.held_outputs(None) == [True]  # one device, no communicator: it holds every output
    out = torch.full((1, 4), 7.0)
    (y,) = program([x], communicator=session.communicator, outputs=[out])
    if session.rank == 0:
        assert y is None
        assert torch.equal(out, torch.full((1, 4), 7.0)), "a preallocated output of mesh [1] was written on rank 0"
    else:
        assert y is out
        torch.testing.assert_close(out, x, rtol=0, atol=0)


def outputs_held_by_all_are_unchanged(session: Session) -> None:
    """A sub-mesh output beside one sharded over every rank: that one is gathered on both, as always."""
    program = _lowered(TWO_OUTPUTS, "two_outputs.mlir")
    x, b = inputs = random_inputs(program.global_input_types, seed=5)
    y, z = session.run(program, inputs, num_streams=2)
    torch.testing.assert_close(z, torch.relu(b), rtol=0, atol=0)
    assert (y is None) == (session.rank == 0)
    if y is not None:
        torch.testing.assert_close(y, x, rtol=0, atol=0)
    y0, z0 = session.to_main(program, [y, z])
    assert z0 is z
    if session.rank == 0:
        torch.testing.assert_close(y0, x, rtol=0, atol=0)


def compiled_on_a_sub_mesh(session: Session) -> None:
    """`hir.compile(..., mesh=[1])` in a 2-rank job: rank 1 gets eager torch's result, rank 0 None."""

    def fn(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.relu(x) * 2.0 + w, torch.sigmoid(x - w)

    torch.manual_seed(6)
    x, w = torch.randn(8, 4), torch.randn(8, 4)
    compiled = hir.compile(fn, (x, w), mesh=[1])
    for _ in range(2):
        got = compiled(x, w)
        assert isinstance(got, tuple)
        assert len(got) == 2
        if session.rank == 0:
            assert got == (None, None), f"rank 0 got {got!r} for outputs of mesh [1]"
        else:
            expected = fn(x, w)
            for g, e in zip(got, expected):
                torch.testing.assert_close(g, e)


CASES: dict[str, Callable[[Session], None]] = {
    "session_run": session_run,
    "program_call": program_call,
    "outputs_held_by_all_are_unchanged": outputs_held_by_all_are_unchanged,
    "compiled_on_a_sub_mesh": compiled_on_a_sub_mesh,
}


def main() -> int:
    session = Session.from_environment("cpu")
    assert session.world_size == 2, "run on 2 ranks"
    failed = False
    for name, case in CASES.items():
        try:
            case(session)
            problem = None
        except Exception as err:
            problem = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        problems: list[str | None] = [None] * session.world_size
        dist.all_gather_object(problems, problem)
        bad = [f"rank {r}: {p}" for r, p in enumerate(problems) if p]
        failed = failed or bool(bad)
        if session.is_main:
            print(f"CASE {name} " + (f"FAIL {' | '.join(bad)}" if bad else "OK"), flush=True)
    session.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
