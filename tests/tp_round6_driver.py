"""
Tensor-parallel model code on 2 gloo ranks (tests/test_tp_round6.py), each case against the
unsharded module run eagerly on the full inputs:

- a training step of a weight-shared block (one tensor-parallel MLP applied twice, as a
  universal transformer or ALBERT does) and of a row-parallel weight tied under two names: the
  two gradients of a sharded weight were refused ("aten.add.Tensor of a sharded parameter or
  gradient is not supported on a mesh"); each device now adds its own blocks. Two steps with an
  SGD update between them, output, input and parameter gradients;
- attention through F.scaled_dot_product_attention with a padding mask, as HF passes one: a
  replicated [B, 1, T, T] float mask (rows in one and in two stream chunks), a [B, 1, 1, T]
  boolean key mask (grouped-query attention), and a [T, T] mask argument with no layout (read as
  replicated rows; beside rows in two stream chunks, where its one chunk was an error, read
  whole) were refused ("a mask is a replicated [L, S] tensor"); each device now reads the mask
  along its heads. A per-head mask [1, heads, T, T] stays an error that says so;
- a GPT-2 block with fused projections (`c_attn(x).split([H, kv, kv], dim=-1)` with grouped key
  and value heads, a `gate_up(x).chunk(2, dim=-1)` MLP, biases): refused ("aten.split.Tensor is
  not supported on a mesh yet"); each rank now holds block d of each piece of the fused weight,
  over calls with an in-place weight update between them and a new batch size; a forward whose
  attribute switches between splitting that output and reading it whole reads each program's own
  shards of the weight;
- a soft mixture of experts, each expert a tensor-parallel MLP weighted by its column of a
  replicated router's softmax (`gates[:, e : e + 1]`): the slice of rows' columns was refused
  ("aten.slice.Tensor is not supported on a mesh yet"); it is local to each rank's rows.

Exits non-zero (on every rank) when a case differs.

    python -m torch.distributed.run --nproc-per-node 2 tests/tp_round6_driver.py
"""

from __future__ import annotations

import copy
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ranks import expect_error, own, run_cases

import hir

H, FFN = 8, 16
ROWS, COL, ROW = "[didx, serial]", "[didx, serial]", "[serial, didx]"


def differs(got: torch.Tensor | None, want: torch.Tensor, what: str, tol: float = 1e-4) -> list[str]:
    if got is None or got.shape != want.shape or not torch.allclose(got, want, rtol=tol, atol=tol):
        return [f"rank {dist.get_rank()}: {what} differs from eager"]
    return []


class SharedBlock(torch.nn.Module):
    """One pre-norm TP MLP applied twice: every weight gets two gradients."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(H)
        self.fc1, self.fc2 = torch.nn.Linear(H, FFN), torch.nn.Linear(FFN, H)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(2):
            x = x + self.fc2(F.gelu(self.fc1(self.norm(x))))
        return x


class TiedRows(torch.nn.Module):
    """fc3 reads fc2's weight: a row-parallel weight under two names, two gradients."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(H, FFN, bias=False), torch.nn.Linear(FFN, H, bias=False)
        self.fc3 = torch.nn.Linear(FFN, H, bias=False)
        self.fc3.weight = self.fc2.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(F.gelu(self.fc1(x))) + self.fc2(F.relu(self.fc1(x)))


def training_steps(block: torch.nn.Module, layouts: dict[str, str], steps: int = 2) -> list[str]:
    """`steps` steps with an SGD update between them: output, x.grad and each parameter's gradient."""
    rank, world = dist.get_rank(), dist.get_world_size()
    eager = copy.deepcopy(block)
    x = torch.randn(4 * world, H)
    compiled = hir.compile(block, (x,), [ROWS], mesh=list(range(world)), param_layouts=layouts, training=True)
    ours, theirs = (torch.optim.SGD(m.parameters(), lr=0.05) for m in (block, eager))
    failures = []
    for step in range(steps):
        x = torch.randn(4 * world, H)
        mine, whole = own(x, rank, world).clone().requires_grad_(), x.clone().requires_grad_()
        y, want = compiled(mine), eager(whole)
        (y * y).sum().backward()
        (want * want).sum().backward()
        failures += differs(y, own(want, rank, world).detach(), f"step {step}: the output")
        failures += differs(mine.grad, own(whole.grad, rank, world), f"step {step}: x.grad", 1e-3)
        for name, p in block.named_parameters():
            layout = {"[didx]": ROWS}.get(layouts.get(name, ""), layouts.get(name))
            want_grad = own(eager.get_parameter(name).grad, rank, world, layout)
            failures += differs(own(p.grad, rank, world, layout), want_grad, f"step {step}: {name}.grad", 1e-3)
        for opt in (ours, theirs):
            opt.step()
            opt.zero_grad()
    return failures


def shared_weights(rank: int, world: int) -> list[str]:
    megatron = {"fc1.weight": COL, "fc1.bias": "[didx]", "fc2.weight": ROW}
    failures = training_steps(SharedBlock(), megatron)
    return failures + training_steps(TiedRows(), {"fc1.weight": COL, "fc2.weight": ROW}, steps=1)


class MaskedAttention(torch.nn.Module):
    """Column-parallel q, k, v viewed as heads, SDPA with the caller's mask, row-parallel o."""

    def __init__(self, heads: int = 4, kv_heads: int = 4) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.width = heads, kv_heads, H // heads
        self.q, self.o = torch.nn.Linear(H, H, bias=False), torch.nn.Linear(H, H, bias=False)
        self.k = torch.nn.Linear(H, kv_heads * self.width, bias=False)
        self.v = torch.nn.Linear(H, kv_heads * self.width, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        M = x.shape[0]
        B = M // T
        q = self.q(x).view(B, T, self.heads, self.width).transpose(1, 2)
        k, v = (p(x).view(B, T, self.kv_heads, self.width).transpose(1, 2) for p in (self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=self.kv_heads != self.heads)
        return self.o(a.transpose(1, 2).reshape(M, H))


T = 4
ATTENTION = {"q.weight": COL, "k.weight": COL, "v.weight": COL, "o.weight": ROW}


def padding_mask(batch: int) -> torch.Tensor:
    """Causal and padded (sequence b keeps its first T - b % T keys): [B, 1, T, T], True where attended."""
    lengths = T - torch.arange(batch) % T
    keep = torch.arange(T)[None, :] < lengths[:, None]
    return keep[:, None, None, :] & torch.tril(torch.ones(T, T, dtype=torch.bool))


def masked(block: torch.nn.Module, mask: torch.Tensor, chunks: int) -> list[str]:
    """`block(x, mask)` on this rank's rows in `chunks` stream chunks, the mask replicated (no layout)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    x = torch.randn(2 * world * T, H)
    rows = f"[(stream({chunks}), didx), serial]"
    compiled = hir.compile(block, (x, mask), [rows, None], [rows], mesh=list(range(world)), param_layouts=ATTENTION)

    def mine(t: torch.Tensor) -> torch.Tensor:
        return t.view(chunks, world, -1, H)[:, rank].flatten(0, 1)

    with torch.no_grad():
        return differs(compiled(mine(x), mask), mine(block(x, mask)), f"mask {list(mask.shape)} in {chunks} chunks")


def attention_masks(rank: int, world: int) -> list[str]:
    keep = padding_mask(2 * world)
    additive = torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))
    failures = masked(MaskedAttention().eval(), additive, 1)
    failures += masked(MaskedAttention().eval(), additive, 2)
    failures += masked(MaskedAttention(4, world).eval(), keep[:, :, -1:, :], 1)  # [B, 1, 1, T], grouped
    failures += masked(MaskedAttention().eval(), torch.randn(T, T), 1)  # [T, T]: replicated rows
    failures += masked(MaskedAttention().eval(), torch.randn(T, T), 2)  # beside stream chunks: read whole
    per_head = torch.randn(1, 4, T, T)
    return failures + expect_error(
        lambda: masked(MaskedAttention().eval(), per_head, 1),
        "a mask is a replicated tensor (a buffer, a constant or an argument with no layout) that broadcasts "
        "along the sharded axis 1 of the heads",
        "got a whole tensor [1, 4, 4, 4]",
    )


class FusedBlock(torch.nn.Module):
    """GPT-2's fused c_attn (grouped key and value heads), a fused gate_up MLP."""

    def __init__(self, heads: int = 4, kv_heads: int = 2) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.width = heads, kv_heads, H // heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(H), torch.nn.LayerNorm(H)
        self.c_attn = torch.nn.Linear(H, H + 2 * kv_heads * self.width)
        self.c_proj = torch.nn.Linear(H, H)
        self.gate_up, self.down = torch.nn.Linear(H, 2 * FFN), torch.nn.Linear(FFN, H)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, kv = x.shape[0], self.kv_heads * self.width
        B = M // T
        q, k, v = self.c_attn(self.ln1(x)).split([H, kv, kv], dim=-1)
        q = q.view(B, T, self.heads, self.width).transpose(1, 2)
        k, v = (t.view(B, T, self.kv_heads, self.width).transpose(1, 2) for t in (k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.c_proj(a.transpose(1, 2).reshape(M, H))
        gate, up = self.gate_up(self.ln2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


FUSED = {"c_attn.weight": COL, "c_attn.bias": "[didx]", "c_proj.weight": ROW, "gate_up.weight": COL,
         "gate_up.bias": "[didx]", "down.weight": ROW}  # fmt: skip


def fused_projections(rank: int, world: int) -> list[str]:
    block = FusedBlock(4, world).eval()
    with torch.no_grad():
        for p in block.parameters():
            p.add_(0.1 * torch.randn_like(p))
    x = torch.randn(2 * world * T, H)
    compiled = hir.compile(block, (x,), [ROWS], [ROWS], mesh=list(range(world)), param_layouts=FUSED)
    failures = []
    with torch.no_grad():
        for call, rows in enumerate((2, 2, 1)):
            if call == 1:  # an optimizer's update in place: the next call reads the new blocks
                block.c_attn.weight.mul_(1.5)
                block.gate_up.bias.add_(0.5)
            x = torch.randn(rows * world * T, H)
            failures += differs(compiled(own(x, rank, world)), own(block(x), rank, world), f"call {call}")
    return failures + fused_or_whole(rank, world)


class Switched(torch.nn.Module):
    """fc's output split into gate and up, or read whole, as an attribute says: two programs, one weight."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.proj = torch.nn.Linear(H, 2 * FFN), torch.nn.Linear(FFN, H, bias=False)
        self.whole = torch.nn.Linear(2 * FFN, H, bias=False)
        self.split = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if self.split:
            gate, up = y.chunk(2, dim=-1)
            return self.proj(F.silu(gate) * up)
        return self.whole(F.gelu(y))


def fused_or_whole(rank: int, world: int) -> list[str]:
    """The programs' shards of fc differ (block d of each piece, or block d): each call reads its own."""
    block = Switched().eval()
    layouts = {"fc.weight": COL, "fc.bias": "[didx]", "proj.weight": ROW, "whole.weight": ROW}
    x = torch.randn(2 * world, H)
    compiled = hir.compile(block, (x,), [ROWS], [ROWS], mesh=list(range(world)), param_layouts=layouts)
    failures = []
    with torch.no_grad():
        for split in (True, False, True):
            block.split = split
            failures += differs(compiled(own(x, rank, world)), own(block(x), rank, world), f"split={split}")
    return failures


class SoftExperts(torch.nn.Module):
    """Every expert a TP MLP, weighted by its column of the router's softmax (a replicated linear)."""

    def __init__(self, experts: int = 3) -> None:
        super().__init__()
        self.router = torch.nn.Linear(H, experts, bias=False)
        self.up = torch.nn.ModuleList(torch.nn.Linear(H, FFN) for _ in range(experts))
        self.down = torch.nn.ModuleList(torch.nn.Linear(FFN, H, bias=False) for _ in range(experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gates = F.softmax(self.router(x), dim=-1)
        out = x
        for e, (up, down) in enumerate(zip(self.up, self.down)):
            out = out + gates[:, e : e + 1] * down(F.gelu(up(x)))
        return out + x.narrow(-1, 2, 4).sum(-1, keepdim=True)


def soft_experts(rank: int, world: int) -> list[str]:
    block = SoftExperts().eval()
    layouts = {f"{name}.{e}.{p}": layout for e in range(3)
               for name, p, layout in (("up", "weight", COL), ("up", "bias", "[didx]"), ("down", "weight", ROW))}  # fmt: skip
    x = torch.randn(4 * world, H)
    compiled = hir.compile(block, (x,), [ROWS], [ROWS], mesh=list(range(world)), param_layouts=layouts)
    with torch.no_grad():
        return differs(compiled(own(x, rank, world)), own(block(x), rank, world), "soft experts")


CASES = {
    "training: a block applied twice, a tied row-parallel weight": shared_weights,
    "attention with padding masks": attention_masks,
    "fused projections": fused_projections,
    "a soft mixture of tensor-parallel experts": soft_experts,
}


def main() -> int:
    return run_cases(CASES, "tp round 6")


if __name__ == "__main__":
    sys.exit(main())
