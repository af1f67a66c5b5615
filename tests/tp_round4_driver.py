"""
Tensor-parallel user code on 3 gloo ranks (tests/test_tp_round4.py), each case against the module
run eagerly on the unsharded input:

- a mesh that names a rank the job lacks: one error at hir.compile on every rank (the ranks of the
  mesh waited for the missing rank at the first call, while a rank outside it raised alone);
- replicated arguments that are not rows over the mesh (a 0-d scale, a [C] shift, a [1, C] context
  through a replicated linear), on the mesh [2, 0, 1]: refused before ("activations are [rows,
  columns]", "1 rows do not split"), now read whole on every rank like a replicated buffer;
- a "[didx]" buffer scaling a column-parallel output's hidden units (each rank its block): refused
  before ("sharded differently");
- a tuple output with a tensor computed whole (from a buffer and a replicated argument) on the
  sub-mesh [1, 2]: its ranks get both outputs, rank 0 None for both;
- token ids into a vocab-parallel embedding (the table's rows sharded, Megatron's
  VocabParallelEmbedding) and then the TP MLP, ids sharded and replicated (1-D activations were
  refused); an id outside the vocabulary is an error on every rank, as torch's lookup raises; on a
  sub-mesh it is one error at the user's line on every rank (a rank outside the mesh would look up
  ids it never receives).

Exits non-zero (on every rank) when a case differs.

    python -m torch.distributed.run --nproc-per-node 3 tests/tp_round4_driver.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ranks import expect_error, run_cases

import hir
from hir.diagnostics import LocatedError

H, FFN = 12, 24
ROWS = "[didx, serial]"
LAYOUTS = {"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]"}


class Block(torch.nn.Module):
    """A TP MLP with replicated extras: a scale, a shift, a context gate, a [didx] scale of the hidden units."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(H, FFN), torch.nn.Linear(FFN, H)
        self.gate = torch.nn.Linear(H, H)
        self.register_buffer("hidden_scale", torch.randn(FFN))
        self.register_buffer("table", torch.randn(3, H))

    def forward(
        self, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, context: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        h = x * torch.sigmoid(self.gate(context)) + shift  # context [1, H], shift [H]: whole on every rank
        y = self.fc2(F.gelu(self.fc1(h)) * self.hidden_scale) * scale  # a [didx] buffer along the hidden units
        return y, self.table * scale + shift  # the second output: computed whole


def arguments(world: int) -> tuple[torch.Tensor, ...]:
    return torch.randn(4 * world, H), torch.tensor(1.5), torch.randn(H), torch.randn(1, H)


def compare(got: tuple[torch.Tensor, ...], want: tuple[torch.Tensor, ...], what: str) -> list[str]:
    if not isinstance(got, tuple) or len(got) != len(want):
        return [f"rank {dist.get_rank()}: {what}: got {type(got).__name__}, not a tuple of {len(want)}"]
    return [
        f"rank {dist.get_rank()}: {what}: output {k} differs from eager"
        for k, (g, w) in enumerate(zip(got, want))
        if g.shape != w.shape or not torch.allclose(g, w, rtol=1e-4, atol=1e-5)
    ]


def on_mesh(mesh: list[int]) -> Callable[[int, int], list[str]]:
    def case(rank: int, world: int) -> list[str]:
        block = Block().eval()
        args = arguments(len(mesh))
        layouts = [ROWS, None, None, None]
        with torch.no_grad():
            want = block(*args)
        compiled = hir.compile(block, args, layouts, [ROWS, None], mesh=mesh, param_layouts={**LAYOUTS,
                               "hidden_scale": "[didx]"})  # fmt: skip
        position = mesh.index(rank) if rank in mesh else 0
        with torch.no_grad():
            got = compiled(args[0].chunk(len(mesh))[position], *args[1:])
        if rank not in mesh:
            return [] if got == (None, None) else [f"rank {rank}: outside the mesh it got {got!r}, not (None, None)"]
        return compare(got, (want[0].chunk(len(mesh))[position], want[1]), f"mesh {mesh}")

    return case


def missing_rank(rank: int, world: int) -> list[str]:
    block = Block().eval()
    return expect_error(
        lambda: hir.compile(
            block,
            arguments(world + 1),
            [ROWS, None, None, None],
            [ROWS, None],
            mesh=list(range(world + 1)),
            param_layouts=LAYOUTS,
        ),
        f"<compile>: error: <Block>: mesh [0, 1, 2, 3] names rank 3, but the job has {world} processes (ranks 0 to 2)",
    )


VOCAB = 18


class Embedded(torch.nn.Module):
    """Token ids [M] -> a vocab-parallel embedding -> the TP MLP."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, H)
        self.fc1, self.fc2 = torch.nn.Linear(H, FFN), torch.nn.Linear(FFN, H)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids)
        return h + self.fc2(F.gelu(self.fc1(h)))


def vocab_parallel(mesh: list[int]) -> Callable[[int, int], list[str]]:
    def case(rank: int, world: int) -> list[str]:
        block, layouts = Embedded().eval(), {**LAYOUTS, "emb.weight": "[didx, serial]"}
        ids = torch.randint(0, VOCAB, (4 * len(mesh),))
        if len(mesh) < world:
            return expect_error(
                lambda: hir.compile(block, (ids,), ["[didx]"], [ROWS], mesh=mesh, param_layouts=layouts),
                "a vocab-parallel embedding (\"[didx, serial]\" on 'emb.weight') runs on a mesh of every rank",
                "rank 0 is outside the mesh [1, 2]",
            )
        with torch.no_grad():
            want = block(ids)
        position, failures, functions = mesh.index(rank), [], []
        for layout in ("[didx]", None):  # sharded ids, rows out; replicated ids, replicated rows out
            compiled = hir.compile(block, (ids,), [layout], [layout and ROWS], mesh=mesh, param_layouts=layouts)
            functions.append(compiled)
            mine = ids.chunk(world)[position] if layout else ids
            with torch.no_grad():
                got = compiled(mine)
            expected = want.chunk(world)[position] if layout else want
            if got.shape != expected.shape or not torch.allclose(got, expected, rtol=1e-4, atol=1e-5):
                failures.append(f"rank {rank}: ids {layout}: differs from eager")
        outside = ids.chunk(world)[position].clone()
        outside[-1] = VOCAB + rank  # an id past the vocabulary: every rank looks it up (all ranks' ids)
        with torch.no_grad():
            try:
                functions[0](outside)
                failures.append(f"rank {rank}: an id outside the vocabulary ran without an error")
            except LocatedError as err:
                if "'fusion.gather' op failed at run time" not in str(err):
                    failures.append(f"rank {rank}: an id outside the vocabulary: {err}")
        return failures

    return case


CASES = {
    "a mesh naming a rank the job lacks": missing_rank,
    "replicated scalars and vectors, mesh [2, 0, 1]": on_mesh([2, 0, 1]),
    "a whole output on the sub-mesh [1, 2]": on_mesh([1, 2]),
    "a vocab-parallel embedding, mesh [2, 0, 1]": vocab_parallel([2, 0, 1]),
    "a vocab-parallel embedding on the sub-mesh [1, 2]": vocab_parallel([1, 2]),
}


def main() -> int:
    return run_cases(CASES, "tp round 4")


if __name__ == "__main__":
    sys.exit(main())
