"""
A Megatron-style tensor-parallel MLP block on D GPUs, written as an nn.Module and compiled by
`hir.compile`, against eager PyTorch and torch.compile's async tensor parallelism, in one run and
on the same tensors:

  x [M/D, H] (sequence-parallel: rows sharded) -> all-gather -> linear H -> 4H/D (column-parallel)
  -> gelu -> linear 4H/D -> H (row-parallel) -> reduce-scatter -> [M/D, H]

  eager          NCCL all-gather, F.linear, gelu, F.linear, NCCL reduce-scatter, one stream
  torch-async-tp torch.compile of the same with functional collectives and
                 torch._inductor.config._micro_pipeline_tp = True (fused all-gather + matmul and
                 matmul + reduce-scatter over symmetric memory)
  hir default    `hir.compile(TPMLP, ...)` with layouts (rows "[(stream(S), didx), serial]",
                 fc1.weight "[didx, serial]", fc2.weight "[serial, didx]") and nothing else:
                 the lowering the cost model picks, replayed as a CUDA graph on a GPU; the table
                 prints the decision and the model's prediction
  hir ...        the same with PIPELINE, run eagerly with NUM_STREAMS; a variant is
                 PIPELINE:NUM_STREAMS:chunks=S (PIPELINE `default`: no pipeline argument)
  ... graph      with --cuda-graph: eager captured in a CUDA graph and replayed, and each hir
                 variant compiled again with cuda_graph=True and the lowering the eager one kept
                 (the same program, replayed)

Every rank builds the same global x [M, H] and weights (one seed); every result is checked
against the module run eagerly on the unsharded x, rows of this rank (relative L2 error in
brackets, WRONG above 3e-2). CUDA-event medians, each repetition after a barrier, max over ranks.
The variants of one size are timed interleaved (round-robin: every round runs each once), so that
GPU clock drift affects them alike.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      python -m torch.distributed.run --nproc-per-node 2 benchmarks/tp_mlp.py

`--device cpu` runs it on CPU processes over gloo, f32, small sizes and wall-clock times, without
torch-async-tp: a check that the compiled block matches eager torch, not a measurement.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ag_gemm import captured, max_over_ranks, release_memory, timed_interleaved

import hir
from hir.runtime.distributed import enable_symmetric_memory

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
VARIANTS = (
    "default:4:chunks=1",
    "stream-lowering{overlap=never}:1:chunks=1",
    "stream-lowering{backend=copy-engine}:1:chunks=1",
    "stream-lowering{backend=copy-engine overlap=by-shard}:4:chunks=1",
    "stream-lowering{backend=copy-engine}:2:chunks=2",
    "stream-lowering:2:chunks=2",
    "stream-lowering:3:chunks=4",
)
"""`hir.compile`'s defaults (the lowering the cost model picks, replayed as a CUDA graph on a GPU);
the serial form (one all-gather, the GEMMs, one reduce-scatter); the copy-engine lowering in one
chunk (its reduce-scatter pipelines the GEMM by destination), pipelined by shard (the rows in one
chunk, the loop over the devices' shards: each shard pushed, multiplied by both GEMMs and its
partial pushed to its owner), and in two chunks; NCCL collectives per chunk
in 2 and 4 chunks. Every variant but the default runs eagerly (and, with --cuda-graph, also
replayed)."""
WRONG = 3e-2
# torch 2.13 renamed the tensor collectives (the old names warn once per rank); older torch has only those.
all_gather_single = getattr(dist, "all_gather_single", dist.all_gather_into_tensor)
reduce_scatter_single = getattr(dist, "reduce_scatter_single", dist.reduce_scatter_tensor)


class TPMLP(torch.nn.Module):
    """The MLP block as a user writes it; the layouts given to hir.compile make it tensor-parallel."""

    def __init__(self, hidden: int, ffn: int, dtype: torch.dtype, device: str):
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, ffn, bias=False, dtype=dtype, device=device)
        self.fc2 = torch.nn.Linear(ffn, hidden, bias=False, dtype=dtype, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


PARAM_LAYOUTS = {"fc1.weight": "[didx, serial]", "fc2.weight": "[serial, didx]"}


def rows_layout(chunks: int) -> str:
    return f"[(stream({chunks}), didx), serial]"


def my_rows(t: torch.Tensor, chunks: int, rank: int, world: int) -> torch.Tensor:
    """This rank's rows of a global [M, C] in the layout "[(stream(chunks), didx), serial]"."""
    M, C = t.shape
    return t.reshape(chunks, world, M // (chunks * world), C)[:, rank].reshape(-1, C)


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.float() - ref.float()).norm() / ref.float().norm()).item()


def eager_tp(x_shard: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, world: int) -> torch.Tensor:
    """Megatron's sequence-parallel MLP with NCCL (gloo: all-reduce, then this rank's rows)."""
    x = torch.empty(x_shard.shape[0] * world, x_shard.shape[1], dtype=x_shard.dtype, device=x_shard.device)
    all_gather_single(x, x_shard)
    partial = F.linear(F.gelu(F.linear(x, w1)), w2)
    if x.device.type == "cpu":  # gloo has no reduce-scatter
        dist.all_reduce(partial)
        return partial.chunk(world)[dist.get_rank()].clone()
    out = torch.empty_like(x_shard)
    reduce_scatter_single(out, partial)
    return out


def torch_async_tp(world: int) -> Callable[..., torch.Tensor]:
    """The same block for torch.compile's micro-pipelined TP, on functional collectives."""
    import torch.distributed._functional_collectives as funcol

    torch._inductor.config._micro_pipeline_tp = True
    group = dist.group.WORLD

    def block(x_shard: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        x = funcol.all_gather_tensor(x_shard, 0, group)
        partial = torch.mm(F.gelu(torch.mm(x, w1.t())), w2.t())
        return funcol.reduce_scatter_tensor(partial, "sum", 0, group)

    return torch.compile(block, fullgraph=True)


def measure(
    M: int, args: argparse.Namespace, device: torch.device
) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = DTYPES[args.dtype]
    torch.manual_seed(args.seed)  # the same global tensors on every rank (made on the device: fast)
    model = TPMLP(args.hidden, args.ffn_mult * args.hidden, dtype, str(device))
    x = torch.randn(M, args.hidden, dtype=dtype, device=device)
    with torch.no_grad():
        reference = model(x)
    F_local = args.ffn_mult * args.hidden // world
    w1 = model.fc1.weight.detach()[rank * F_local : (rank + 1) * F_local].contiguous()
    w2 = model.fc2.weight.detach()[:, rank * F_local : (rank + 1) * F_local].contiguous()
    x_shard = x.chunk(world)[rank].contiguous()
    mine = reference.chunk(world)[rank]
    checked = CheckedVariants()
    decisions: dict[str, str] = {}

    with torch.no_grad():
        checked.add("eager", lambda: eager_tp(x_shard, w1, w2, world), mine)
        if args.cuda_graph:
            checked.add("eager graph", captured(lambda: eager_tp(x_shard, w1, w2, world)), mine)
        if device.type == "cuda" and not args.no_torch_compile:
            checked.add_if_it_builds("torch-async-tp", lambda: torch_async_tp(world), (x_shard, w1, w2), mine)
        add_hir_variants(checked, decisions, model, x, reference, args, lambda chunks: M % (chunks * world) == 0)
        times = checked.timed(args.reps, args.warmup, device)
    return *checked.over_ranks(times, device), decisions


class CheckedVariants:
    """
    One size's variants: each checked against its expected result at its first call, as it is
    added (so a hir.compile default's first call, which may measure candidate lowerings, comes
    before any timing), then all timed together, interleaved (`timed_interleaved`).
    """

    def __init__(self) -> None:
        self.runs: dict[str, Callable[[], torch.Tensor]] = {}
        self.expected: dict[str, torch.Tensor] = {}
        self.errors: dict[str, float] = {}
        """Relative error by variant: its first call's, and after `timed` the worse of that and its last call's."""

    def add(self, name: str, fn: Callable[[], torch.Tensor], want: torch.Tensor) -> None:
        self.errors[name] = relative_error(fn(), want)
        self.runs[name], self.expected[name] = fn, want

    def timed(self, reps: int, warmup: int, device: torch.device) -> dict[str, float]:
        """Median ms by variant, in the order added; the last timed call of each checked too (a replay's)."""
        last: dict[str, torch.Tensor] = {}

        def keeping(name: str, fn: Callable[[], torch.Tensor]) -> Callable[[], None]:
            def run() -> None:
                last[name] = fn()

            return run

        times = timed_interleaved({name: keeping(name, fn) for name, fn in self.runs.items()}, reps, warmup, device)
        for name, out in last.items():
            self.errors[name] = max(self.errors[name], relative_error(out, self.expected[name]))
        return times

    def add_if_it_builds(
        self, name: str, build: Callable[[], Callable[..., torch.Tensor]], args: tuple, want: torch.Tensor
    ) -> None:
        """A baseline that may be missing on this build (torch.compile's async TP): reported and left out if so."""
        try:
            fn = build()
            self.add(name, lambda: fn(*args), want)
        except Exception as err:
            if dist.get_rank() == 0:
                print(f"{name} failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")

    def over_ranks(self, times: dict[str, float], device: torch.device) -> tuple[dict[str, float], dict[str, float]]:
        """Each variant's time and error, the worst over the ranks."""
        return (
            {k: max_over_ranks(v, device.type) for k, v in times.items()},
            {k: max_over_ranks(v, device.type) for k, v in self.errors.items()},
        )


def add_hir_variants(
    checked: CheckedVariants,
    decisions: dict[str, str],
    model: torch.nn.Module,
    x: torch.Tensor,
    reference: torch.Tensor,
    args: argparse.Namespace,
    fits: Callable[[int], bool],
    param_layouts: dict[str, str] = PARAM_LAYOUTS,
) -> None:
    """
    Each `--variants` entry `PIPELINE:NUM_STREAMS:chunks=S` whose S `fits`: the model compiled with
    its rows in S chunks and its weights cut by `param_layouts`. `default` is hir.compile's
    defaults (its decision goes to `decisions`); any other pipeline runs eagerly, and with
    --cuda-graph also replayed, as a compiled object of its own for the lowering the eager one
    kept (the two are timed interleaved).
    """
    rank, world = dist.get_rank(), dist.get_world_size()
    for variant in args.variants.split(","):
        pipeline, num_streams, chunks_text = variant.rsplit(":", 2)
        chunks = int(chunks_text.removeprefix("chunks="))
        if not fits(chunks):
            continue
        layout = rows_layout(chunks)
        name = f"hir {variant}"
        common = {"mesh": list(range(world)), "param_layouts": param_layouts, "num_streams": int(num_streams)}
        options = {} if pipeline == "default" else {"pipeline": pipeline, "cuda_graph": False}
        block = hir.compile(model, (x,), [layout], [layout], **common, **options)
        rows = my_rows(x, chunks, rank, world).contiguous()
        want = my_rows(reference, chunks, rank, world)
        # The first call (in `checked.add`, before the timing) may measure candidate lowerings and keep one.
        checked.add(name, lambda block=block, rows=rows: block(rows), want)
        if pipeline == "default" and block.lowering is not None:
            decisions[name] = block.lowering.reason
        if args.cuda_graph and pipeline != "default":
            kept = block.specialization(rows).pipeline
            replayed = hir.compile(model, (x,), [layout], [layout], **common, pipeline=kept, cuda_graph=True)
            checked.add(f"{name} graph", lambda replayed=replayed, rows=rows: replayed(rows), want)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--sizes", help="comma list of M (default: 8192,16384,32768 on cuda, 64 on cpu)")
    p.add_argument("--hidden", type=int, help="H (default: 8192 on cuda, 32 on cpu)")
    p.add_argument("--ffn-mult", type=int, default=4, help="the first linear's width is this times H")
    p.add_argument("--dtype", choices=DTYPES, help="default: bf16 on cuda, f32 on cpu")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma list of PIPELINE:NUM_STREAMS:chunks=S")
    p.add_argument("--no-torch-compile", action="store_true", help="skip the torch-async-tp baseline")
    p.add_argument(
        "--cuda-graph",
        action="store_true",
        help="also run eager and each hir variant as a CUDA graph (replayed; hir.compile(..., cuda_graph=True))",
    )
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    cpu = args.device == "cpu"
    if cpu and args.cuda_graph:
        raise SystemExit("--cuda-graph needs --device cuda")
    args.sizes = args.sizes or ("64" if cpu else "8192,16384,32768")
    args.hidden = args.hidden or (32 if cpu else 8192)
    args.dtype = args.dtype or ("f32" if cpu else "bf16")
    return args


def start_job(device_type: str) -> torch.device:
    """torch.distributed for a benchmark under torchrun: gloo on CPU, NCCL with symmetric memory on GPUs."""
    if device_type == "cpu":
        dist.init_process_group("gloo")
        return torch.device("cpu")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=device)
    enable_symmetric_memory(dist.group.WORLD.group_name)
    return device


Rows = list[tuple[str, dict[str, float], dict[str, float], dict[str, str]]]
"""Per size: its label, then ms, relative error and the default's decision by variant."""


def report(title: str, rows: Rows) -> bool:
    """Rank 0 prints the table (x of eager, and of eager replayed where measured); True if a result is WRONG."""
    wrong = False
    if dist.get_rank() != 0:
        return wrong
    print(f"\n{title}; ms (max over ranks of per-rank median); x of eager; rel. error in []")
    for label, times, errors, decisions in rows:
        print(f"\n{label}")
        graph = times.get("eager graph")
        for name, ms in times.items():
            flag = "  WRONG" if errors[name] > WRONG else ""
            wrong |= errors[name] > WRONG
            versus_graph = f"  x{ms / graph:.2f} of eager graph" if graph else ""
            print(f"  {name:<52} {ms:9.3f}  x{ms / times['eager']:.2f}{versus_graph}  [{errors[name]:.1e}]{flag}")
        for name, reason in decisions.items():
            print(f"  {name}: {reason}")
    return wrong


def end_job(wrong: bool, device: torch.device) -> int:
    """Rank 0's verdict on every rank (the exit status), then the process group's end."""
    verdict = torch.tensor([int(wrong)], device=device)
    dist.broadcast(verdict, 0)
    # Every rank past its last collective before any tears its connections down: a rank that
    # destroys the group while a peer still finishes one aborts that peer (gloo). The monitored
    # barrier is a handshake with every rank (a plain one can return on one rank first).
    if device.type == "cpu":
        dist.monitored_barrier(wait_all_ranks=True)
    else:
        dist.barrier()
    dist.destroy_process_group()
    return int(verdict.item())


def main() -> int:
    args = parse_args()
    device = start_job(args.device)
    rows: Rows = []
    for M in (int(s) for s in args.sizes.split(",")):
        rows.append((f"M={M}", *measure(M, args, device)))
        release_memory(device)  # this size's compiled variants and graphs, before the next size's
    title = f"TP MLP, D={dist.get_world_size()}, H={args.hidden}, FFN={args.ffn_mult}H, {args.dtype}, {device.type}"
    return end_job(report(title, rows), device)


if __name__ == "__main__":
    raise SystemExit(main())
