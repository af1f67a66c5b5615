"""
Tensor-parallel calls on 2 gloo ranks (tests/test_tp_round5.py) with the argument and module-state
cases that gave silent wrong answers on one device, each against the unsharded module run
eagerly:

- a training step whose forward reads module attributes (a scale, a residual flag, a config
  dict's entry) changed between calls: the step ran with the values of its trace (a silent
  wrong answer in the output and every gradient); now each new value traces steps of its own;
- the same tensor passed for two arguments, a -0.0 Python scalar after 0.0 (and -0.0 on one
  rank, 0.0 on the others: one CallError on every rank), a parameter passed as an argument,
  load_state_dict and a replaced submodule between calls, new batch sizes;
- training on the mesh [1, 0]: gradients accumulated over two micro-batches, then clipped by the
  compiled step's clip_grad_norm_.

Exits non-zero (on every rank) when a case differs.

    python -m torch.distributed.run --nproc-per-node 2 tests/tp_round5_driver.py
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ranks import expect_error, own, run_cases

import hir

H, FFN = 8, 24
ROWS = "[didx, serial]"
PARAMS = {"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]"}
TOL = dict(rtol=1e-4, atol=1e-5)


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(H)
        self.fc1, self.fc2 = torch.nn.Linear(H, FFN), torch.nn.Linear(FFN, H)
        self.scale, self.residual, self.config = 2.0, True, {"mult": 1.0}
        with torch.no_grad():
            self.norm.weight.add_(0.1 * torch.randn(H))
            self.fc2.bias.normal_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc2(F.gelu(self.fc1(self.norm(x)))) * self.scale * self.config["mult"]
        return x + y if self.residual else y


class Pair(Block):
    def forward(self, x: torch.Tensor, y: torch.Tensor, s: float, bias: torch.Tensor) -> torch.Tensor:
        return (self.fc2(F.gelu(self.fc1(x))) + 2 * y) * s + bias


def differs(got: torch.Tensor | None, want: torch.Tensor, what: str) -> list[str]:
    if got is None or got.shape != want.shape or not torch.allclose(got, want, **TOL):
        return [f"rank {dist.get_rank()}: {what} differs from eager"]
    if not torch.equal(torch.signbit(got), torch.signbit(want)):
        return [f"rank {dist.get_rank()}: {what}: the signs of its zeros differ from eager's"]
    return []


def step(compiled: Callable[..., torch.Tensor], block: Block, eager: Block, x: torch.Tensor, what: str,
         mesh: list[int] | None = None, layout: str | None = ROWS) -> list[str]:  # fmt: skip
    """One forward and backward of a sum-of-squares loss: the output, x's and the parameters' gradients."""
    world = dist.get_world_size()
    position = (mesh or list(range(world))).index(dist.get_rank())
    mine = own(x, position, world, layout).clone().requires_grad_()
    whole = x.clone().requires_grad_()
    y, want = compiled(mine), eager(whole)
    (y * y).sum().backward()
    (want * want).sum().backward()
    failures = differs(y, own(want, position, world, layout).detach(), f"{what}: the output")
    failures += differs(mine.grad, own(whole.grad, position, world, layout), f"{what}: x.grad")
    for name, p in block.named_parameters():
        layout = PARAMS.get(name)
        theirs = eager.get_parameter(name).grad
        failures += differs(
            own(p.grad, position, world, layout), own(theirs, position, world, layout), f"{what}: {name}.grad"
        )
    return failures


def training(mesh: list[int] | None = None) -> Callable[[int, int], list[str]]:
    def case(rank: int, world: int) -> list[str]:
        block = Block()
        eager = copy.deepcopy(block)
        x = torch.randn(4 * world, H)
        compiled = hir.compile(block, (x,), [ROWS], mesh=mesh or list(range(world)), param_layouts=PARAMS,
                               training=True)  # fmt: skip
        failures = step(compiled, block, eager, x, "scale 2.0", mesh)
        for module in (block, eager):
            module.scale, module.residual = -0.5, False
            module.config["mult"] = 3.0
            module.zero_grad()
        failures += step(compiled, block, eager, x, "scale -0.5, no residual, config['mult'] = 3.0", mesh)
        failures += step(compiled, block, eager, torch.randn(4 * world, H), "a second micro-batch accumulated", mesh)
        ours = compiled.clip_grad_norm_(0.5)
        theirs = torch.nn.utils.clip_grad_norm_(eager.parameters(), 0.5)
        if not torch.allclose(ours, theirs, **TOL):
            failures.append(f"rank {rank}: clip_grad_norm_ {ours} where eager's is {theirs}")
        return failures

    return case


def arguments(rank: int, world: int) -> list[str]:
    """The same tensor twice, -0.0 after 0.0, a parameter as an argument; new values and sizes."""
    block = Pair().eval()
    x = torch.randn(4 * world, H)
    compiled = hir.compile(block, (x, x.clone(), 1.0, block.fc2.bias), [ROWS, ROWS, None, None], [ROWS],
                           mesh=list(range(world)), param_layouts=PARAMS)  # fmt: skip
    failures = []
    with torch.no_grad():
        for rows, s in ((4, 0.0), (4, -0.0), (2, -0.0), (4, 1.5)):
            x = torch.randn(rows * world, H)
            got = compiled(own(x, rank, world), own(x, rank, world), s, block.fc2.bias)
            failures += differs(got, own(block(x, x, s, block.fc2.bias), rank, world), f"f(x, x, {s}, fc2.bias)")
        block.fc2.bias.add_(1.0)
        y = torch.randn(4 * world, H)
        got = compiled(own(x, rank, world), own(y, rank, world), 1.5, block.fc2.bias)
        failures += differs(got, own(block(x, y, 1.5, block.fc2.bias), rank, world), "an updated bias")
        x = torch.randn(3 * world, H)  # a new signature, which the ranks compare (a cached one is not compared)
        failures += expect_error(
            lambda: compiled(own(x, rank, world), own(x, rank, world), -0.0 if rank == 1 else 0.0, block.fc2.bias),
            "the ranks of the mesh called it with different arguments",
            "s: 0.0, bias: float32[8]); rank 1: (",
            "s: -0.0, bias: float32[8])",
        )
    return failures


def module_changes(rank: int, world: int) -> list[str]:
    """load_state_dict, a replaced submodule and a replaced parameter between calls."""
    block = Block().eval()
    x = torch.randn(4 * world, H)
    compiled = hir.compile(block, (x,), [ROWS], [ROWS], mesh=list(range(world)), param_layouts=PARAMS)
    failures = []
    with torch.no_grad():
        failures += differs(compiled(own(x, rank, world)), own(block(x), rank, world), "before")
        block.load_state_dict(Block().state_dict())
        failures += differs(compiled(own(x, rank, world)), own(block(x), rank, world), "after load_state_dict")
        block.fc2 = torch.nn.Linear(FFN, H)
        failures += differs(compiled(own(x, rank, world)), own(block(x), rank, world), "fc2 replaced")
        block.fc1.weight = torch.nn.Parameter(torch.randn(FFN, H))
        failures += differs(compiled(own(x, rank, world)), own(block(x), rank, world), "fc1.weight replaced")
    return failures


CASES = {
    "training on the mesh [1, 0]: attributes changed between calls, accumulation, clipping": training([1, 0]),
    "arguments: the same tensor twice, -0.0, a parameter": arguments,
    "module changes between calls": module_changes,
}


def main() -> int:
    return run_cases(CASES, "tp round 5")


if __name__ == "__main__":
    sys.exit(main())
