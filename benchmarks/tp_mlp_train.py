"""
Training step of the MLP block of benchmarks/tp_mlp.py (linear H -> 4H, gelu, linear 4H -> H, no
biases), on one device or tensor-parallel on D (under torchrun): the forward and the backward,
compiled by `hir.compile(..., training=True)`, against eager PyTorch and torch.compile, in one run
and on the same tensors.

  eager          model(x).backward(dy)
  torch.compile  torch.compile(model) (inductor's forward and backward)
  hir            hir.compile(model, (x,), training=True): AOT autograd's forward and backward
                 graphs, each lowered with stream-lowering and run by hir's runtime, replayed as
                 a CUDA graph or not as the first call measured faster (hir.compile's default)
  hir eager      with --cuda-graph: the same, cuda_graph=False (each program launched by the host)
  hir graph      with --cuda-graph: the same, cuda_graph=True (each program replayed)

One step is `model(x).backward(dy)` with the parameters' gradients reset to None before it (an
optimizer's zero_grad). Every variant's output and gradients (x's, fc1's, fc2's) are checked
against eager (relative L2 error of the worst, WRONG above 3e-2). CUDA-event medians on a GPU.
The variants of one size are timed interleaved (round-robin: every round runs each once, after
a barrier under torchrun), so that GPU clock drift affects them alike.

    python benchmarks/tp_mlp_train.py                        # bf16, H = 4096 and 8192 on one GPU
    python benchmarks/tp_mlp_train.py --device cpu           # f32, small: a check, not a measurement

Under torchrun (WORLD_SIZE > 1) the block is Megatron's sequence-parallel TP MLP of
benchmarks/tp_mlp.py (or with `--block layer` the TP transformer layer of benchmarks/tp_layer.py,
whose replicated norms' gradients the eager forms all-reduce after the backward, as sequence
parallelism needs) and one step is `block(x_rows).backward(dy_rows)` on this rank's rows:

  eager          all-gather, F.linear, gelu, F.linear, reduce-scatter with autograd (the backward:
                 all-gather of dy, the GEMMs, reduce-scatter of dx), one stream
  torch-async-tp torch.compile of the same on functional collectives with autograd and
                 torch._inductor.config._micro_pipeline_tp = True
  hir VARIANT    hir.compile(model, ..., mesh=..., param_layouts=..., training=True) with rows
                 "[(stream(S), didx), serial]"; VARIANT is PIPELINE:NUM_STREAMS:chunks=S
                 (PIPELINE `default`: no pipeline argument); with --cuda-graph each program is
                 replayed, without it hir.compile's default decides at the first call

Each rank's output rows, input-gradient rows and weight-gradient blocks are checked against the
unsharded module run eagerly with autograd on the global x (relative L2 error of the worst).
CUDA-event medians, each repetition after a barrier, max over ranks.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      python -m torch.distributed.run --nproc-per-node 4 benchmarks/tp_mlp_train.py --hidden 8192 --sizes 16384
    python -m torch.distributed.run --nproc-per-node 2 benchmarks/tp_mlp_train.py --device cpu   # gloo: a check
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ag_gemm import max_over_ranks, release_memory, timed_interleaved
from tp_mlp import PARAM_LAYOUTS, all_gather_single, end_job, my_rows, reduce_scatter_single, start_job

import hir

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
WRONG = 3e-2


class MLP(torch.nn.Module):
    def __init__(self, hidden: int, ffn: int, dtype: torch.dtype, device: str):
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, ffn, bias=False, dtype=dtype, device=device)
        self.fc2 = torch.nn.Linear(ffn, hidden, bias=False, dtype=dtype, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()


def step(model: torch.nn.Module, run: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, dy: torch.Tensor):
    """One forward and backward; returns the output and the gradients (x, then the parameters)."""

    def once() -> list[torch.Tensor]:
        for p in model.parameters():
            p.grad = None
        x.grad = None
        out = run(x)
        out.backward(dy)
        return [out.detach(), x.grad, *(p.grad for p in model.parameters())]  # type: ignore[list-item]

    return once


def measure(hidden: int, M: int, args: argparse.Namespace, device: torch.device) -> list[tuple[str, float, float]]:
    dtype = DTYPES[args.dtype]
    torch.manual_seed(args.seed)
    model = MLP(hidden, args.ffn_mult * hidden, dtype, str(device))
    x = torch.randn(M, hidden, dtype=dtype, device=device, requires_grad=True)
    dy = torch.randn(M, hidden, dtype=dtype, device=device)
    variants: list[tuple[str, Callable[[torch.Tensor], torch.Tensor]]] = [("eager", model)]
    if not args.no_torch_compile:
        variants.append(("torch.compile", torch.compile(model)))
    variants.append(("hir", hir.compile(model, (x.detach(),), training=True)))
    if args.cuda_graph:
        variants.append(("hir eager", hir.compile(model, (x.detach(),), training=True, cuda_graph=False)))
        variants.append(("hir graph", hir.compile(model, (x.detach(),), training=True, cuda_graph=True)))
    steps: dict[str, Callable[[], list[torch.Tensor]]] = {}
    errors: dict[str, float] = {}
    reference: list[torch.Tensor] = []
    for name, run in variants:  # every first call (a hir.compile default's may measure lowerings) before any timing
        once = step(model, run, x, dy)
        results = [t.clone() for t in once()]
        if not reference:
            reference = results
        errors[name] = max(relative_error(a, b) for a, b in zip(results, reference))
        steps[name] = once
    times = timed_interleaved(steps, args.reps, args.warmup, device)
    return [(name, times[name], errors[name]) for name in steps]


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise SystemExit(tp_main(args))
    device = torch.device(args.device)
    if device.type == "cpu" and args.dtype == "bf16":
        args.dtype = "f32"
    hiddens = (
        [int(h) for h in args.hidden.split(",")] if args.hidden else ([4096, 8192] if device.type == "cuda" else [64])
    )
    sizes = (
        [int(m) for m in args.sizes.split(",")] if args.sizes else ([8192, 16384] if device.type == "cuda" else [128])
    )
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(
        f"MLP training step (forward + backward), {args.dtype}, FFN = {args.ffn_mult}H, {name}, torch {torch.__version__}"
    )
    print(f"{'H':>6} {'M':>6}  {'variant':<14} {'ms':>9} {'x eager':>8}  error")
    wrong = False
    for hidden in hiddens:
        for M in sizes:
            rows = measure(hidden, M, args, device)
            release_memory(device)  # this size's compiled variants, before the next size's
            eager_ms = rows[0][1]
            for variant, ms, error in rows:
                flag = "  WRONG" if error > WRONG else ""
                wrong |= error > WRONG
                print(f"{hidden:>6} {M:>6}  {variant:<14} {ms:>9.3f} {ms / eager_ms:>8.2f}  {error:.1e}{flag}")
    if wrong:
        raise SystemExit("error: a variant's output or gradients differ from eager's")


# -- tensor-parallel (under torchrun) ------------------------------------------------------------


class _GatherRows(torch.autograd.Function):
    """All-gather of the rows; its backward reduce-scatters the rows' gradient."""

    @staticmethod
    def forward(ctx: Any, shard: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        world = dist.get_world_size()
        out = torch.empty(shard.shape[0] * world, *shard.shape[1:], dtype=shard.dtype, device=shard.device)
        all_gather_single(out, shard.contiguous())
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return _reduce_scatter(grad.contiguous())


class _ScatterRows(torch.autograd.Function):
    """Reduce-scatter of the partial sums' rows; its backward all-gathers the gradient."""

    @staticmethod
    def forward(ctx: Any, partial: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return _reduce_scatter(partial.contiguous())

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return _GatherRows.forward(ctx, grad)


def _reduce_scatter(partial: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    if partial.device.type == "cpu":  # gloo has no reduce-scatter
        total = partial.clone()
        dist.all_reduce(total)
        return total.chunk(world)[dist.get_rank()].contiguous()
    out = torch.empty(partial.shape[0] // world, *partial.shape[1:], dtype=partial.dtype, device=partial.device)
    reduce_scatter_single(out, partial)
    return out


@dataclass
class TPBlock:
    """A block to train tensor-parallel: the module, its sharded parameters' layouts, and its eager TP form."""

    name: str
    model: torch.nn.Module
    layouts: dict[str, str]
    eager: Callable[..., torch.Tensor]
    """`eager(x_shard, blocks, gather, scatter)`: this rank's rows of the output, from its rows and
    its blocks of the sharded parameters (by name), with the rows' all-gather and reduce-scatter."""


def mlp_block(hidden: int, args: argparse.Namespace, device: torch.device) -> TPBlock:
    """Megatron's sequence-parallel MLP: all-gather, column-parallel fc1, gelu, row-parallel fc2, reduce-scatter."""
    model = MLP(hidden, args.ffn_mult * hidden, DTYPES[args.dtype], str(device))

    def eager(x: torch.Tensor, w: dict[str, torch.Tensor], gather: Any, scatter: Any) -> torch.Tensor:
        return scatter(F.linear(F.gelu(F.linear(gather(x), w["fc1.weight"])), w["fc2.weight"]))

    return TPBlock("MLP", model, dict(PARAM_LAYOUTS), eager)


def layer_block(hidden: int, args: argparse.Namespace, device: torch.device) -> TPBlock:
    """benchmarks/tp_layer.py's TP transformer layer (causal attention of this rank's heads)."""
    from tp_layer import PARAM_LAYOUTS as LAYER_LAYOUTS
    from tp_layer import TPLayer

    world = dist.get_world_size()
    heads = args.heads or max(world, hidden // 128)
    seq = args.seq or (2048 if device.type == "cuda" else 8)
    model = TPLayer(hidden, heads, args.ffn_mult * hidden, seq, DTYPES[args.dtype], str(device))

    def eager(x: torch.Tensor, w: dict[str, torch.Tensor], gather: Any, scatter: Any) -> torch.Tensor:
        h = gather(model.norm1(x))
        M = h.shape[0]
        B, T, local_heads = M // seq, seq, heads // world
        q, k, v = (F.linear(h, w[f"{p}.weight"]).view(B, T, local_heads, -1).transpose(1, 2) for p in "qkv")
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(M, -1)
        x = x + scatter(F.linear(a, w["o.weight"]))
        return x + scatter(F.linear(F.gelu(F.linear(gather(model.norm2(x)), w["fc1.weight"])), w["fc2.weight"]))

    return TPBlock(f"transformer layer ({heads} heads, T={seq})", model, dict(LAYER_LAYOUTS), eager)


BLOCKS = {"mlp": mlp_block, "layer": layer_block}


def torch_async_tp(block: TPBlock) -> Callable[..., torch.Tensor]:
    """The block for torch.compile's micro-pipelined TP, on functional collectives with autograd."""
    import torch.distributed._functional_collectives as funcol

    torch._inductor.config._micro_pipeline_tp = True
    group = dist.group.WORLD

    def gather(x: torch.Tensor) -> torch.Tensor:
        return funcol.all_gather_tensor_autograd(x, 0, group)

    def scatter(partial: torch.Tensor) -> torch.Tensor:
        return funcol.reduce_scatter_tensor_autograd(partial, "sum", 0, group)

    def run(x_shard: torch.Tensor, w: dict[str, torch.Tensor]) -> torch.Tensor:
        return block.eager(x_shard, w, gather, scatter)

    return torch.compile(run, fullgraph=True)


def _block_of(t: torch.Tensor, layout: str, rank: int, world: int) -> torch.Tensor:
    """This rank's block of a parameter (or of its gradient) cut as `layout` says."""
    axis = 0 if layout.replace(" ", "") == "[didx,serial]" else 1
    n = t.shape[axis] // world
    return t.narrow(axis, rank * n, n)


def measure_tp(
    hidden: int, M: int, args: argparse.Namespace, device: torch.device
) -> tuple[str, list[tuple[str, float, float]]]:
    """Per variant: (name, ms, worst relative error of the rows, dx's rows and the sharded weights' blocks)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = DTYPES[args.dtype]
    torch.manual_seed(args.seed)  # the same global tensors on every rank
    block = BLOCKS[args.block](hidden, args, device)
    model = block.model
    x = torch.randn(M, hidden, dtype=dtype, device=device)
    dy = torch.randn(M, hidden, dtype=dtype, device=device)
    xr = x.clone().requires_grad_(True)
    model(xr).backward(dy)  # the unsharded reference
    sharded = {n: model.get_parameter(n) for n in block.layouts}
    reference = {n: _block_of(p.grad, block.layouts[n], rank, world).clone() for n, p in sharded.items()}  # type: ignore[arg-type]
    with torch.no_grad():
        y = model(x)
    dx = xr.grad
    assert dx is not None

    def check(chunks: int, out: torch.Tensor, x_grad: torch.Tensor, grads: dict[str, torch.Tensor]) -> float:
        return max(
            relative_error(out, my_rows(y, chunks, rank, world)),
            relative_error(x_grad, my_rows(dx, chunks, rank, world)),
            *(relative_error(grads[n], reference[n]) for n in sharded),
        )

    steps: dict[str, Callable[[], torch.Tensor]] = {}
    errors: dict[str, float] = {}
    blocks = {n: _block_of(p.detach(), block.layouts[n], rank, world).clone().requires_grad_(True) for n, p in sharded.items()}  # fmt: skip
    shard = my_rows(x, 1, rank, world).clone().requires_grad_(True)
    dy_shard = my_rows(dy, 1, rank, world).contiguous()

    def eager(x_shard: torch.Tensor, w: dict[str, torch.Tensor]) -> torch.Tensor:
        return block.eager(x_shard, w, _GatherRows.apply, _ScatterRows.apply)

    baselines: list[tuple[str, Callable[..., torch.Tensor]]] = [("eager", eager)]
    if device.type == "cuda" and not args.no_torch_compile:
        baselines.append(("torch-async-tp", torch_async_tp(block)))
    for name, run in baselines:

        def once(run: Callable[..., torch.Tensor] = run) -> torch.Tensor:
            model.zero_grad(set_to_none=True)  # the replicated parameters (norms) are the module's
            shard.grad = None
            for w in blocks.values():
                w.grad = None
            out = run(shard, blocks)
            out.backward(dy_shard)
            # Sequence parallelism: each rank's replicated parameters (the norms) have the gradient
            # of its rows; their sum over the ranks is the gradient (hir's backward sums them too).
            for name, p in model.named_parameters():
                if name not in block.layouts and p.grad is not None:
                    dist.all_reduce(p.grad)
            return out

        try:
            out = once()
            grads = {n: w.grad for n, w in blocks.items()}
            errors[name] = check(1, out.detach(), shard.grad, grads)  # type: ignore[arg-type]
            steps[name] = once
        except Exception as err:  # report and go on: the baseline may be missing on this build
            if rank == 0:
                print(f"{name} failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
    for variant in args.variants.split(","):
        pipeline, num_streams, chunks_text = variant.rsplit(":", 2)
        chunks = int(chunks_text.removeprefix("chunks="))
        if M % (chunks * world) or (args.block == "layer" and (M // model.seq) % chunks):  # type: ignore[operator]
            continue  # a layer's chunks are whole sequences
        layout = f"[(stream({chunks}), didx), serial]"
        options: dict[str, Any] = {} if pipeline == "default" else {"pipeline": pipeline}
        began = time.perf_counter()
        compiled = hir.compile(
            model, (x,), [layout], mesh=list(range(world)), param_layouts=block.layouts, training=True,
            num_streams=int(num_streams), cuda_graph=True if args.cuda_graph else None, **options,
        )  # fmt: skip
        mine = my_rows(x, chunks, rank, world).clone().requires_grad_(True)
        dy_mine = my_rows(dy, chunks, rank, world).contiguous()

        def step_hir(
            compiled: Any = compiled, mine: torch.Tensor = mine, dy_mine: torch.Tensor = dy_mine
        ) -> torch.Tensor:
            model.zero_grad(set_to_none=True)
            mine.grad = None
            out = compiled(mine)
            out.backward(dy_mine)
            return out

        # The first call, checked (a default's may measure candidate lowerings) before any timing;
        # where a slow first call goes, in stages: the capture of the step and the forward's
        # lowerings and measurement, then the backward's.
        model.zero_grad(set_to_none=True)
        mine.grad = None
        out = compiled(mine)
        if rank == 0:
            print(f"hir {variant}: compiled, first forward in {time.perf_counter() - began:.1f} s", file=sys.stderr)
        out.backward(dy_mine)
        if rank == 0:
            print(f"hir {variant}: compiled and first step in {time.perf_counter() - began:.1f} s", file=sys.stderr)
            for programs in compiled.graphs.values():  # what the cost model and the first call decided
                for which, program in programs.items():
                    reason = program.lowering.reason if program.lowering is not None else program.pipeline
                    decision = f"; {program.graph_decision}" if program.graph_decision else ""
                    print(f"  {which}: {reason}{decision}", file=sys.stderr)
        grads = {n: _block_of(p.grad, block.layouts[n], rank, world) for n, p in sharded.items()}  # type: ignore[arg-type]
        errors[f"hir {variant}"] = check(chunks, out.detach(), mine.grad, grads)  # type: ignore[arg-type]
        steps[f"hir {variant}"] = step_hir
    times = timed_interleaved(steps, args.reps, args.warmup, device)
    rows = [
        (name, max_over_ranks(times[name], device.type), max_over_ranks(errors[name], device.type)) for name in steps
    ]
    if args.back_to_back:
        report_back_to_back(hidden, M, steps, args.reps, device)
    return block.name, rows


def report_back_to_back(
    hidden: int, M: int, steps: dict[str, Callable[[], torch.Tensor]], reps: int, device: torch.device
) -> None:
    """
    Each variant's `reps` steps run back to back, as a training loop runs them (one barrier and
    synchronization before, one after): the host's time to issue a step and the wall time per step
    (ms, max over ranks). Where the host's time nears the wall time, the host is the limit, and a
    step timed from an idle device (the table) also waits for the host.
    """
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for name, step in steps.items():
        dist.barrier()
        synchronize()
        began = time.perf_counter()
        for _ in range(reps):
            step()
        issued = time.perf_counter()
        synchronize()
        ended = time.perf_counter()
        host = max_over_ranks((issued - began) * 1e3 / reps, device.type)
        wall = max_over_ranks((ended - began) * 1e3 / reps, device.type)
        if dist.get_rank() == 0:
            print(f"back to back: H={hidden} M={M} {name}: host {host:.3f} ms/step, wall {wall:.3f} ms/step")


def tp_main(args: argparse.Namespace) -> int:
    device = start_job(args.device)
    if device.type == "cpu":
        args.dtype = "f32"
    hiddens = (
        [int(h) for h in args.hidden.split(",")] if args.hidden else ([4096, 8192] if device.type == "cuda" else [32])
    )
    sizes = [int(m) for m in args.sizes.split(",")] if args.sizes else ([16384] if device.type == "cuda" else [64])
    world = dist.get_world_size()
    wrong = False
    table = []
    block_name = ""
    for hidden in hiddens:
        for M in sizes:
            block_name, rows = measure_tp(hidden, M, args, device)
            table.append((hidden, M, rows))
            release_memory(device)  # this size's compiled variants and graphs, before the next size's
    if dist.get_rank() == 0:
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (gloo)"
        print(f"TP {block_name} training step (forward + backward), D={world}, {args.dtype}, FFN = {args.ffn_mult}H, "
              f"{name}, torch {torch.__version__}; ms: max over ranks of per-rank medians")  # fmt: skip
        print(f"{'H':>6} {'M':>6}  {'variant':<60} {'ms':>9} {'x eager':>8}  error")
        for hidden, M, rows in table:
            eager_ms = rows[0][1]
            for variant, ms, error in rows:
                flag = "  WRONG" if error > WRONG else ""
                wrong |= error > WRONG
                print(f"{hidden:>6} {M:>6}  {variant:<60} {ms:>9.3f} {ms / eager_ms:>8.2f}  {error:.1e}{flag}")
    return end_job(wrong, device)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="bf16 (f32 on CPU)")
    p.add_argument("--hidden", default="", help="H, comma-separated (default: 4096,8192 on a GPU, 64 on CPU)")
    p.add_argument("--sizes", default="", help="M, comma-separated (default: 8192,16384 on a GPU, 128 on CPU)")
    p.add_argument("--ffn-mult", type=int, default=4)
    p.add_argument(
        "--block",
        choices=sorted(BLOCKS),
        default="mlp",
        help="under torchrun: the MLP, or benchmarks/tp_layer.py's TP transformer layer",
    )
    p.add_argument("--heads", type=int, default=0, help="--block layer: attention heads (default: H/128)")
    p.add_argument(
        "--seq", type=int, default=0, help="--block layer: sequence length (default: 2048 on a GPU, 8 on CPU)"
    )
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-torch-compile", action="store_true", help="skip torch.compile (its compile takes a while)")
    p.add_argument(
        "--back-to-back",
        action="store_true",
        help="under torchrun: also run each variant's steps back to back and print the host's and the wall time per step",
    )
    p.add_argument(
        "--cuda-graph",
        action="store_true",
        help="one device: also hir with cuda_graph=False and =True; under torchrun: every hir program replayed",
    )
    p.add_argument(
        "--variants",
        default=(
            "default:4:chunks=1,default:4:chunks=2,stream-lowering:2:chunks=2,"
            "stream-lowering{backend=copy-engine}:2:chunks=2,stream-lowering:3:chunks=4"
        ),
        help="under torchrun: the hir variants, a comma list of PIPELINE:NUM_STREAMS:chunks=S (the weight "
        "gradients' all-gathers pipeline in S > 1 chunks)",
    )
    return p


if __name__ == "__main__":
    main()
