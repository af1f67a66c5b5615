"""
Training on a 2-rank gloo mesh as users write the loop: a column-parallel fc1 frozen for the
first step, unfrozen after (the step traced for each set of parameters that require grad;
eager's gradient, or None where eager's is None), against the unsharded module
run eagerly; and a step compiled for the sub-mesh [1], which leaves rank 0 out: one clear error
on every rank, at the compile (the job's ranks known) or at the first call (compiled before
`init_process_group`).

    python tests/rank_launcher.py --processes 2 --port 29500 -- tests/training_round2_driver.py
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ranks import job_verdict

import hir
from hir.frontend import FrontendError

H, M = 16, 16
PARAMS = {"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]", "fc2.bias": None}
TOL = dict(rtol=1e-4, atol=1e-5)


class MLP(torch.nn.Module):
    def __init__(self, ffn: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(H, ffn)
        self.fc2 = torch.nn.Linear(ffn, H)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(x)))


def block(t: torch.Tensor, axis: int, rank: int, world: int) -> torch.Tensor:
    """This rank's block of a sharded parameter's gradient, as torch's chunk cuts it."""
    return t.chunk(world, axis)[rank]


def requires_grad_changes() -> list[str]:
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    module = MLP(32)
    eager = copy.deepcopy(module)
    x = torch.randn(M, H)
    compiled = hir.compile(module, (x,), ["[didx, serial]"], mesh=list(range(world)), param_layouts=PARAMS,
                           training=True)  # fmt: skip
    failures = []
    for step, frozen in enumerate(["fc1", None]):
        for m in (module, eager):
            m.requires_grad_(True)
            if frozen:
                m.get_submodule(frozen).requires_grad_(False)
            m.zero_grad()
        compiled(x.chunk(world)[rank]).pow(2).sum().backward()
        eager(x).pow(2).sum().backward()
        for name, p in module.named_parameters():
            want = eager.get_parameter(name).grad
            if (p.grad is None) != (want is None):
                failures.append(f"step {step} ({frozen} frozen): {name}.grad is {p.grad}, eager's {want}")
                continue
            if want is None:
                continue
            layout = PARAMS[name]
            axis = None if layout is None else 1 if layout == "[serial, didx]" else 0
            got = p.grad if axis is None else block(p.grad, axis, rank, world)
            if axis is not None:
                want = block(want, axis, rank, world)
            if not torch.allclose(got, want, **TOL):
                failures.append(f"step {step} ({frozen} frozen): rank {rank} {name}.grad differs")
    return failures


def expect_outside_error(call: Callable[[], object], stage: str) -> list[str]:
    rank = dist.get_rank()
    try:
        call()
    except FrontendError as err:
        parts = [f"<{stage}>: error: <MLP>: training=True on mesh [1] in a job of 2 ranks", "rank 0 is outside the mesh",
                 f"(this is rank {rank})", "compile it with mesh=list(range(2))"]  # fmt: skip
        missing = [p for p in parts if p not in str(err)]
        return [f"rank {rank}: the {stage} error lacks {missing}: {err}"] if missing else []
    return [f"rank {rank}: no error at the {stage} of a step on the sub-mesh [1]"]


def outside_the_mesh(compiled_before_init: Callable[..., torch.Tensor]) -> list[str]:
    """A rank outside a training step's mesh would run no backward: an error on every rank (the mesh's too)."""
    x = torch.randn(M, H)
    failures = expect_outside_error(
        lambda: hir.compile(MLP(32), (x,), ["[didx, serial]"], mesh=[1], param_layouts=PARAMS, training=True),
        "compile",
    )
    return failures + expect_outside_error(lambda: compiled_before_init(x.chunk(2)[0]), "call")


def main() -> int:
    x = torch.randn(M, H)
    before_init = hir.compile(MLP(32), (x,), ["[didx, serial]"], mesh=[1], param_layouts=PARAMS, training=True)
    dist.init_process_group("gloo")
    failures = requires_grad_changes() + outside_the_mesh(before_init)
    return job_verdict(failures, "training round 2 on a mesh: every check matches eager torch")


if __name__ == "__main__":
    sys.exit(main())
