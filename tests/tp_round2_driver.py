"""
Tensor-parallel user code on 2 gloo ranks (tests/test_tp_round2.py), each case against the module
or program run eagerly on the unsharded input:

- a module with sharded parameters compiled for the sub-mesh [1]: every rank calls it, rank 1
  gets its rows, rank 0 (outside the mesh) gets None;
- statistics of a row-parallel output (`y - y.mean(-1, keepdim=True)`) and a replicated `[1, C]`
  shift added to the rows;
- fusion programs whose result is sharded along an axis the op reads whole (a softmax, a cumsum
  and a flip along it, a reshape that merges it): each device's shard of the whole result.

Exits non-zero (on every rank) when a case differs.

    python -m torch.distributed.run --nproc-per-node 2 tests/tp_round2_driver.py
"""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

import hir
from hir.runtime.distributed import Session
from hir.runtime.inputs import random_inputs

H, FFN, M = 16, 32, 16
ROWS = "[didx, serial]"


class MLP(torch.nn.Module):
    """A TP MLP whose output is centred per row (its mean over the columns of the summed rows)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(H, FFN)
        self.fc2 = torch.nn.Linear(FFN, H, bias=False)
        self.register_buffer("shift", torch.randn(1, H))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc2(F.gelu(self.fc1(x + self.shift)))
        return y - y.mean(-1, keepdim=True)


LAYOUTS = {"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]"}


def my_rows(t: torch.Tensor, position: int, devices: int) -> torch.Tensor:
    return t.chunk(devices)[position]


def module_cases() -> list[str]:
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    mlp, x = MLP().eval(), torch.randn(M, H)
    with torch.no_grad():
        want = mlp(x)
    failures = []
    for mesh in (list(range(world)), [1]):
        compiled = hir.compile(mlp, (x,), [ROWS], [ROWS], mesh=mesh, param_layouts=LAYOUTS)
        position = mesh.index(rank) if rank in mesh else 0
        with torch.no_grad():
            got = compiled(my_rows(x, position, len(mesh)))
        if rank not in mesh:
            if got is not None:
                failures.append(f"mesh {mesh}: rank {rank} is outside it and got {type(got)}, not None")
        elif not torch.allclose(got, my_rows(want, position, len(mesh)), rtol=1e-4, atol=1e-5):
            failures.append(f"mesh {mesh}: rank {rank} differs from eager")
    return failures


def _program(op: str, result: str) -> str:
    x = "tensor<4x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>"
    return f"""
func.func @main(%x: {x}) -> {result} {{
  %y = {op} %x : {x} -> {result}
  func.return %y : {result}
}}
"""


PROGRAMS = {
    "softmax": _program("fusion.softmax", "tensor<4x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>")
    .replace("%x :", "%x dim = 0 :"),
    "cumsum": _program("fusion.cumsum", "tensor<4x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>")
    .replace("%x :", "%x dim = 0 :"),
    "flip": _program("fusion.flip", "tensor<4x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>")
    .replace("%x :", "%x dims = [0] :"),
    "reshape": _program("fusion.reshape", "tensor<24xf32, #fusion.parallel<[didx], mesh = [0, 1]>>"),
}  # fmt: skip


def program_cases(session: Session) -> list[str]:
    failures = []
    for name, text in PROGRAMS.items():
        module = hir.parse(text, f"{name}.mlir")
        reference = hir.compile_program(module.clone())
        program = hir.compile_program(hir.run_pipeline(module, "stream-lowering"))
        inputs = random_inputs(program.global_input_types, seed=1)
        (got,) = session.run(program, inputs)
        (want,) = session.run_reference(reference, inputs)
        if not torch.allclose(got, want, rtol=1e-5, atol=1e-6):
            failures.append(f"{name} along the didx axis: rank {session.rank} differs from the reference")
    return failures


def main() -> int:
    session = Session.from_environment("cpu")
    failures = module_cases() + program_cases(session)
    for failure in failures:
        print(failure, file=sys.stderr)
    verdict = torch.tensor([len(failures)])
    dist.all_reduce(verdict)
    if session.is_main and not verdict.item():
        print("tp round 2: every case matches")
    session.close()
    return int(verdict.item() > 0)


if __name__ == "__main__":
    sys.exit(main())
