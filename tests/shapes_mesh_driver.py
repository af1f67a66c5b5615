"""
A tensor-parallel MLP compiled once on a mesh of every rank and called with other numbers of rows:
each call passes this rank's shard, a new row count compiles a specialization (from the logical
shape, D times the shard's rows), and every result matches eager torch on the unsharded input;
then the module's parameters change (one updated in place, one replaced), and each rank's shards,
copies of their blocks, follow them.

    python -m torch.distributed.run --nproc-per-node 2 tests/shapes_mesh_driver.py
"""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

import hir

H, FFN = 16, 32
ROWS = "[(stream(2), didx), serial]"
PARAMS = {"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]"}


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(H, FFN)
        self.fc2 = torch.nn.Linear(FFN, H)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x))) + x


def rows_of(t: torch.Tensor, chunks: int, position: int, devices: int) -> torch.Tensor:
    return t.view(chunks, devices, -1, t.shape[1])[:, position].reshape(-1, t.shape[1])


def main() -> int:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # the same module and inputs on every rank
    mlp = MLP()
    compiled = hir.compile(
        mlp, (torch.randn(8 * world, H),), [ROWS], [ROWS], mesh=list(range(world)), param_layouts=PARAMS
    )
    failures = []
    for rows in (8 * world, 4 * world, 12 * world, 4 * world):
        x = torch.randn(rows, H)
        with torch.no_grad():
            got, want = compiled(rows_of(x, 2, rank, world)), rows_of(mlp(x), 2, rank, world)
        if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
            failures.append(f"rank {rank}, {rows} rows: differs by {(got - want).abs().max().item():.2e}")
    with torch.no_grad():  # what an optimizer step and a load by assignment do
        mlp.fc1.weight.mul_(0.5)
        mlp.fc2.weight = torch.nn.Parameter(torch.randn(H, FFN))
        x = torch.randn(4 * world, H)
        got, want = compiled(rows_of(x, 2, rank, world)), rows_of(mlp(x), 2, rank, world)
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
        failures.append(f"rank {rank}, changed parameters: differs by {(got - want).abs().max().item():.2e}")
    assert compiled.specializations is not None
    if len(compiled.specializations.keys) != 3:
        failures.append(f"rank {rank}: {len(compiled.specializations.keys)} specializations, expected 3")
    for failure in failures:
        print(failure, flush=True)
    dist.barrier()
    if rank == 0 and not failures:
        print("every row count matches eager torch, also after the parameters changed", flush=True)
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
