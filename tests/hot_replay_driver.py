"""
The hot call path of replayed graphs on GPUs (frontend/hot_replay.py, frontend/handed_outputs.py),
run by tests/test_hot_replay.py under `torchrun --nproc-per-node N` (N = 1 or 2):

- one device per rank: calls with fresh inputs against eager torch, an in-place parameter update
  seen by the next call, a held result kept, a held view kept (that call runs eagerly);
- a mesh of every rank (tensor-parallel MLP, NCCL): the same, a view of a result passed as the
  next call's argument, and a view of a result held over the next call, which then raises the
  stale-result error on use instead of reading the next call's values.

Prints `ALL OK` on rank 0 when every check passed; a failed check raises (a nonzero exit).
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from tp_mlp import PARAM_LAYOUTS, TPMLP, my_rows, rows_layout

import hir
from hir.runtime.distributed import enable_symmetric_memory


def close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    torch.testing.assert_close(actual.float(), expected.float(), rtol=2e-2, atol=2e-2, msg=lambda m: f"{what}: {m}")


def one_device(device: torch.device) -> None:
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64)).to(device)
    f = hir.compile(block, (torch.randn(16, 64, device=device),))
    with torch.no_grad():
        for k in range(5):
            x = torch.randn(16, 64, device=device)
            close(f(x), block(x), f"one device, call {k}")
        assert f._hot is not None, "no hot path after five replayed calls"
        block[0].weight.mul_(-1.5)  # in place: the graph reads the parameter where it is
        x = torch.randn(16, 64, device=device)
        close(f(x), block(x), "after an in-place update")
        first = f(x)
        kept = first.clone()
        second = f(torch.randn(16, 64, device=device))
        close(first, kept, "a held result")
        view, values = second[2:], second[2:].clone()
        third_x = torch.randn(16, 64, device=device)
        close(f(third_x), block(third_x), "the call over a held view")
        close(view, values, "a held view")


def mesh(device: torch.device, rank: int, world: int) -> None:
    torch.manual_seed(1)
    H, M = 128, 64 * world
    model = TPMLP(H, 4 * H, torch.float32, str(device))
    x = torch.randn(M, H, device=device)
    f = hir.compile(
        model, (my_rows(x, 1, rank, world),), [rows_layout(1)], [rows_layout(1)], mesh=list(range(world)),
        param_layouts=PARAM_LAYOUTS,
    )  # fmt: skip

    def check(result: torch.Tensor, full: torch.Tensor, what: str) -> None:
        close(result, my_rows(model(full), 1, rank, world), what)

    with torch.no_grad():
        for k in range(5):
            full = torch.randn(M, H, device=device)
            check(f(my_rows(full, 1, rank, world).contiguous()), full, f"mesh, call {k}")
        assert f.specialization(my_rows(full, 1, rank, world).contiguous())._replay is not None, (
            "the mesh never replayed"
        )
        assert f._hot is not None, "no hot path on the mesh"
        model.fc1.weight.mul_(0.5)
        full = torch.randn(M, H, device=device)
        check(f(my_rows(full, 1, rank, world).contiguous()), full, "mesh, after an in-place update")
        a = torch.randn(M, H, device=device)
        first = f(my_rows(a, 1, rank, world).contiguous())
        kept = first.clone()
        b = torch.randn(M, H, device=device)
        check(f(my_rows(b, 1, rank, world).contiguous()), b, "mesh, the call after")
        close(first, kept, "mesh, a held result")
        # A view of a result as the next call's argument: read before the replay overwrites it.
        c = torch.randn(M, H, device=device)
        y = f(my_rows(c, 1, rank, world).contiguous())
        chained = f(y[:])  # every rank's y is its rows of model(c): the mesh computes model(model(c))
        close(chained, my_rows(model(model(c)), 1, rank, world), "mesh, a view of a result as the argument")
        # A view of a result held over the next call: stale, and says so on use.
        d = torch.randn(M, H, device=device)
        held = f(my_rows(d, 1, rank, world).contiguous())[1:]
        f(my_rows(torch.randn(M, H, device=device), 1, rank, world).contiguous())
        try:
            held.sum().item()
            error = ""
        except RuntimeError as err:
            error = str(err)
        if "overwrote" not in error:
            raise AssertionError(f"a view of a result held over the next call: {error or 'read without an error'}")


def main() -> None:
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=device)
    enable_symmetric_memory(dist.group.WORLD.group_name)
    rank, world = dist.get_rank(), dist.get_world_size()
    one_device(device)
    mesh(device, rank, world)
    # As the benchmarks end: the graphs freed, then every rank past its last collective before
    # any tears the connections down.
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    dist.barrier()
    if rank == 0:
        print("ALL OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
