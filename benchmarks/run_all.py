"""
Reproduces the GPU results of docs/benchmarks.md, docs/runtime.md and docs/multidevice.md on one
host with two or more GPUs: the GPU verification runs (the CUDA tests, the lowering's numerics on
real streams, every multi-device example over NCCL with both backends) and every benchmark, the
compile-time benchmark (CPU only) included.

    python benchmarks/run_all.py [--gpus N] [--out DIR] [--only NAME,...] [--quick] [--dry-run]

Each step writes what it printed to DIR/NAME.out (results and tables) and DIR/NAME.err
(warnings, NCCL and torchrun logs); DIR/summary.md lists every step with its commands, exit
status and time, then its output; DIR/environment.txt records the GPUs, their topology, the
driver, the versions and the commit. `--list` shows the steps. Adding a benchmark is one more line
in STEPS.

The multi-device examples are written for 2 devices, so their steps run 2 processes; the
benchmarks run one process per GPU (`--gpus`, default: every visible GPU). The steps run with
NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1, as the published
numbers were measured: NVLink SHARP / multicast off, which shared GPU hosts need (`--multicast`
leaves the environment as it is).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
# Placeholders in commands, replaced when they run: the number of GPUs (--gpus), the output folder.
GPUS, OUT = "<gpus>", "<out>"
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

Command = tuple[str, ...]


def torchrun(processes: str, *argv: str) -> Command:
    return (PY, "-m", "torch.distributed.run", "--nproc-per-node", processes, *argv)


def pytest(*argv: str) -> Command:
    return (PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *argv)


def lower_and_check(example: str, pipeline: str) -> tuple[Command, Command]:
    """hir-opt lowers the example, hir-run runs it under torchrun against the fusion-level source."""
    lowered = f"{OUT}/lowered-{Path(example).stem}-{'copy-engine' if 'copy-engine' in pipeline else 'nccl'}.mlir"
    return (
        (PY, "-m", "hir.tools.hir_opt", "-p", pipeline, example, "-o", lowered),
        torchrun(
            "2", "-m", "hir.tools.hir_run", lowered, "--reference", example, "--device", "cuda", "--num-streams", "3"
        ),
    )


@dataclass(frozen=True)
class Step:
    name: str
    what: str
    commands: tuple[Command, ...]
    env: dict[str, str] = field(default_factory=dict)
    quick: tuple[str, ...] = ()
    """Arguments appended to every command with --quick: a small size, few repetitions."""
    cpu: bool = False
    """Runs on the CPU: needs no GPU."""
    gpus: int = 0
    """The GPUs it needs when its jobs have a fixed process count other than 2 (0: from the commands)."""

    @property
    def min_gpus(self) -> int:
        if self.cpu:
            return 0
        if self.gpus:
            return self.gpus
        return 2 if any("torch.distributed.run" in command for command in self.commands) else 1


EXAMPLES = (
    "examples/ag_matmul.mlir",
    *sorted(p.relative_to(REPO).as_posix() for p in REPO.glob("examples/multidevice/*.mlir")),
)
BACKENDS = ("stream-lowering", "stream-lowering{backend=copy-engine}")
AG_GEMM = "stream-lowering{backend=copy-engine chunks=1}:1,stream-lowering{backend=copy-engine}:1,stream-lowering{backend=copy-engine}:2,stream-lowering:2:chunks=2,stream-lowering{backend=ring}:2:chunks=2"
AG_GEMM_CHUNKS = "stream-lowering{backend=copy-engine}:1,stream-lowering{backend=copy-engine chunks=1}:1,stream-lowering{backend=copy-engine chunks=2}:1,stream-lowering{backend=copy-engine chunks=4}:1,stream-lowering{backend=copy-engine release=start}:1"
AG_GEMM_NCCL = "stream-lowering:2,stream-lowering:2:chunks=2,stream-lowering:4:chunks=4"
RS_SIZES = "16384x4096,32768x2048,16384x1024,32768x1024"
# The copy-engine lowering as written and as the cost model decides (overlap=auto), each also replayed as a CUDA graph.
AG_GEMM_OVERLAP = "stream-lowering{backend=copy-engine}:1,stream-lowering{backend=copy-engine overlap=auto}:1"
SMALL_M = "1024x4096,2048x4096,4096x4096"
AR_SIZES = "16384x4096,32768x2048,16384x1024"
# The copy-engine lowering's variants (release, pieces) besides the default ones, checked on the GPUs.
DRIVER_PIPELINES = "nccl,copy-engine,copy-engine-auto,copy-engine-start,copy-engine-end,ring"
RESHARDINGS = tuple(sorted(p.relative_to(REPO).as_posix() for p in REPO.glob("tests/resharding/*.mlir")))
FOUR_DEVICE_RESHARDINGS = tuple(
    sorted(p.relative_to(REPO).as_posix() for p in REPO.glob("tests/resharding/four_devices/*.mlir"))
)
UNEVEN = tuple(sorted(p.relative_to(REPO).as_posix() for p in REPO.glob("tests/resharding/uneven/*.mlir")))
FOUR_DEVICE_UNEVEN = tuple(
    sorted(p.relative_to(REPO).as_posix() for p in REPO.glob("tests/resharding/uneven/four_devices/*.mlir"))
)
# Schedules: comm stream priority, joins through the worker streams, rings vs whole intermediates.
AG_GEMM_SCHEDULES = "stream-lowering{backend=copy-engine}:1,stream-lowering{backend=copy-engine comm-priority=high}:1,stream-lowering{backend=copy-engine}:2,stream-lowering{backend=copy-engine comm-priority=high}:2,stream-lowering{backend=copy-engine join=chain}:2,stream-lowering:2:chunks=2,stream-lowering{join=chain}:2:chunks=2,stream-lowering:4:chunks=4,stream-lowering{join=chain}:4:chunks=4,stream-lowering{intermediates=whole}:4:chunks=4"
AG_GEMM_NCCL_SCHEDULES = "stream-lowering:2:chunks=2,stream-lowering{join=chain}:2:chunks=2,stream-lowering:4:chunks=4,stream-lowering{join=chain}:4:chunks=4"
RS_SCHEDULES = "stream-lowering{backend=copy-engine}:1:chunks=1,stream-lowering{backend=copy-engine comm-priority=high}:1:chunks=1,stream-lowering{backend=copy-engine}:2:chunks=2,stream-lowering{backend=copy-engine join=chain}:2:chunks=2,stream-lowering:2:chunks=2,stream-lowering{join=chain}:2:chunks=2,stream-lowering:4:chunks=4,stream-lowering{join=chain}:4:chunks=4"
RS_NCCL_SCHEDULES = "stream-lowering:2:chunks=2,stream-lowering{join=chain}:2:chunks=2,stream-lowering:4:chunks=4,stream-lowering{join=chain}:4:chunks=4"
SCHEDULE_SIZES = "16384x4096,32768x2048,16384x1024,4096x4096,2048x4096"
# The copy-engine GEMM + reduce-scatter with its release barrier at the start and at the end: host time to the first GEMM.
FIRST_LAUNCH = (
    "stream-lowering{backend=copy-engine}:1:chunks=1,stream-lowering{backend=copy-engine release=end}:1:chunks=1"
)
# The row-parallel lowerings replayed as CUDA graphs: NCCL per chunk, copy-engine in 1 and 2 chunks.
ROW_PARALLEL_GRAPHS = "stream-lowering:2:chunks=2,stream-lowering{backend=copy-engine}:1:chunks=1,stream-lowering{backend=copy-engine}:1:chunks=2"
QUICK = ("--sizes", "8192x1024", "--reps", "5", "--warmup", "2")
# hir.compile's defaults, then the lowerings they choose between, eager and replayed.
TP_MLP_DEFAULTS = "default:4:chunks=1,stream-lowering{overlap=never}:1:chunks=1,stream-lowering{backend=copy-engine}:1:chunks=1,stream-lowering{backend=copy-engine overlap=by-shard}:4:chunks=1,stream-lowering{backend=copy-engine}:2:chunks=2"

# fmt: off
STEPS: tuple[Step, ...] = (
    Step("cuda-tests", "the CUDA tests on one GPU", (pytest("tests", "-m", "cuda"),)),
    Step("gpu-numerics", "stream-lowering numerics and the fuzzer on real streams, slowed", (pytest("tests/test_stream_lowering.py", "tests/test_fuzz_stream_lowering.py"),), {"HIR_TEST_DEVICE": "cuda"}),
    Step("nccl-examples", "every multi-device example, the three backends (copy-engine: its release and pieces variants), 1 and 3 streams, over NCCL", (torchrun("2", "tests/distributed_driver.py", "--device", "cuda", "--pipelines", DRIVER_PIPELINES, *EXAMPLES),)),
    Step("nccl-reshardings", "every 2-device resharding module of the tests over NCCL: three backends and propagation; the uneven shards with nccl", (
        torchrun("2", "tests/distributed_driver.py", "--device", "cuda", "--pipelines", "nccl,copy-engine,ring,propagate", *RESHARDINGS),
        torchrun("2", "tests/distributed_driver.py", "--device", "cuda", "--pipelines", "nccl,propagate", *UNEVEN),
    )),
    Step("nccl-reshardings-4", "every 4-device resharding module of the tests over NCCL on 4 GPUs: three backends; the uneven shards with nccl", (
        torchrun("4", "tests/distributed_driver.py", "--device", "cuda", "--pipelines", "nccl,copy-engine,ring", *FOUR_DEVICE_RESHARDINGS),
        torchrun("4", "tests/distributed_driver.py", "--device", "cuda", "--pipelines", "nccl", *FOUR_DEVICE_UNEVEN),
    ), gpus=4),
    Step("hir-run-check", "every multi-device example lowered by hir-opt (both backends), checked by hir-run", tuple(c for f in EXAMPLES for p in BACKENDS for c in lower_and_check(f, p))),
    Step("race-check", "the race checker on real streams: the corpus race-free and the mutation score, one GPU and 2 ranks over NCCL with symmetric memory", ((PY, "tests/race_mutants.py", "--device", "cuda"), torchrun("2", "tests/race_mutants.py", "--multidevice", "--device", "cuda"))),
    Step("race-check-cost", "the race checker's cost per access, one GPU", ((PY, "benchmarks/race_check_cost.py", "--device", "cuda"),), quick=("--iterations", "16", "64")),
    Step("host-overhead", "host time per hir op against hand-written torch calls, one GPU", ((PY, "benchmarks/host_overhead.py", "--device", "cuda"),), quick=("--repeats", "10", "--warmup", "2", "--chain", "1000")),
    Step("host-overhead-graph", "host time per hir op of the program replayed as a CUDA graph, one GPU", ((PY, "benchmarks/host_overhead.py", "--device", "cuda", "--cuda-graph", "--chain", "0"),), quick=("--repeats", "10", "--warmup", "2")),
    Step("first-launch", "host time from the call to the first GEMM of the copy-engine GEMM + reduce-scatter, 2 GPUs", (torchrun("2", "benchmarks/gemm_rs.py", "--sizes", "16384x4096", "--reps", "20", "--first-launch", "--variants", FIRST_LAUNCH),), quick=QUICK),
    Step("ag-gemm", "all-gather + GEMM: baselines, copy-engine, NCCL and ring lowerings; timeline PNG", (torchrun(GPUS, "benchmarks/ag_gemm.py", "--reps", "50", "--warmup", "10", "--profile", OUT, "--profile-variant", "2", "--variants", AG_GEMM),), quick=QUICK),
    Step("ag-gemm-chunks", "all-gather + GEMM: copy-engine pushes chosen automatically or 1, 2, 4", (torchrun(GPUS, "benchmarks/ag_gemm.py", "--reps", "30", "--warmup", "5", "--variants", AG_GEMM_CHUNKS),), quick=QUICK),
    Step("ag-gemm-nccl", "all-gather + GEMM: the collective-based (NCCL) pipelines", (torchrun(GPUS, "benchmarks/ag_gemm.py", "--reps", "30", "--warmup", "5", "--variants", AG_GEMM_NCCL),), quick=QUICK),
    Step("compile-time", "hir-opt --stream-lowering compile time on 100-10000-op modules, per stage; CPU", ((PY, "benchmarks/compile_time.py"),), quick=("--sizes", "chain:100,200", "--repeats", "1"), cpu=True),
    Step("ag-gemm-small", "all-gather + GEMM at small M: copy-engine as written and overlap=auto, eager and CUDA graphs", (torchrun(GPUS, "benchmarks/ag_gemm.py", "--reps", "50", "--warmup", "10", "--sizes", SMALL_M, "--cuda-graph", "--variants", AG_GEMM_OVERLAP),), quick=QUICK),
    Step("ag-gemm-graph", "all-gather + GEMM at the main sizes: copy-engine as written and overlap=auto, eager and CUDA graphs", (torchrun(GPUS, "benchmarks/ag_gemm.py", "--reps", "30", "--warmup", "5", "--cuda-graph", "--variants", AG_GEMM_OVERLAP),), quick=QUICK),
    Step("gemm-rs", "GEMM + reduce-scatter: baselines, the NCCL, copy-engine and ring pipelines and their variants; timeline PNG", (torchrun(GPUS, "benchmarks/gemm_rs.py", "--reps", "20", "--warmup", "5", "--sizes", RS_SIZES, "--profile", OUT),), quick=QUICK),
    Step("matmul-ar", "matmul + all-reduce: baselines, the NCCL, copy-engine and ring pipelines and their variants; timeline PNG", (torchrun(GPUS, "benchmarks/matmul_ar.py", "--reps", "20", "--warmup", "5", "--sizes", AR_SIZES, "--profile", OUT),), quick=QUICK),
    Step("row-parallel-graph", "GEMM + reduce-scatter and matmul + all-reduce, eager and as CUDA graphs (the unfused sequence too)", (torchrun(GPUS, "benchmarks/gemm_rs.py", "--reps", "30", "--warmup", "5", "--sizes", AR_SIZES, "--cuda-graph", "--variants", ROW_PARALLEL_GRAPHS), torchrun(GPUS, "benchmarks/matmul_ar.py", "--reps", "30", "--warmup", "5", "--sizes", AR_SIZES, "--cuda-graph", "--variants", ROW_PARALLEL_GRAPHS)), quick=QUICK),
    Step("ag-gemm-schedules", "all-gather + GEMM: comm stream priority, join=chain, whole intermediates; then NCCL at high priority", (torchrun(GPUS, "benchmarks/ag_gemm.py", "--reps", "30", "--warmup", "5", "--sizes", SCHEDULE_SIZES, "--variants", AG_GEMM_SCHEDULES), torchrun(GPUS, "benchmarks/ag_gemm.py", "--reps", "30", "--warmup", "5", "--sizes", SCHEDULE_SIZES, "--nccl-high-priority", "--variants", AG_GEMM_NCCL_SCHEDULES)), quick=QUICK),
    Step("gemm-rs-schedules", "GEMM + reduce-scatter: copy-engine comm stream priority, join=chain; then NCCL at high priority", (torchrun(GPUS, "benchmarks/gemm_rs.py", "--reps", "20", "--sizes", RS_SIZES, "--variants", RS_SCHEDULES), torchrun(GPUS, "benchmarks/gemm_rs.py", "--reps", "20", "--sizes", RS_SIZES, "--nccl-high-priority", "--variants", RS_NCCL_SCHEDULES)), quick=QUICK),
    Step("tp-mlp", "tensor-parallel MLP block from PyTorch (hir.compile) against eager NCCL and torch.compile async TP", (torchrun(GPUS, "benchmarks/tp_mlp.py", "--reps", "20"),), quick=("--sizes", "8192", "--reps", "5", "--warmup", "2")),
    Step("tp-mlp-graph", "the tensor-parallel MLP block, eager and hir, also replayed as CUDA graphs", (torchrun(GPUS, "benchmarks/tp_mlp.py", "--reps", "20", "--cuda-graph", "--no-torch-compile"),), quick=("--sizes", "8192", "--reps", "5", "--warmup", "2")),
    Step("attention-block", "an attention block on one GPU (fusion.sdpa on torch's fused kernel) against eager, eager replayed and torch.compile", ((PY, "benchmarks/attention_block.py", "--reps", "20", "--first-launch"),), quick=("--reps", "5", "--warmup", "2")),
    Step("kv-cache-decode", "a decoding step of a gpt-fast-style decoder with KV caches updated in place (written back by hir.compile) against eager and torch.compile reduce-overhead, on one GPU", ((PY, "benchmarks/kv_cache_decode.py", "--reps", "50"),), quick=("--reps", "5", "--warmup", "2")),
    Step("segment-policies", "fusion-segment's policies on model code on one GPU (nanoGPT blocks, a Llama MLP, a decoding step), without a graph and replayed, against eager, hir.compile's default and torch.compile", ((PY, "benchmarks/segment_policies.py", "--reps", "30"),), quick=("--reps", "5", "--warmup", "2")),
    Step("model-blocks", "model code as people write it on one GPU (a Llama block with GQA and rotary, a top-2 mixture of experts, a ViT block, the Llama block's training step): hir.compile's defaults against eager and torch.compile", ((PY, "benchmarks/model_blocks.py", "--reps", "30"),), quick=("--reps", "5", "--warmup", "2")),
    Step("tp-layer", "tensor-parallel transformer layer from PyTorch (norm, column-parallel q/k/v, fused attention of each GPU's heads, row-parallel output, the MLP) against eager NCCL and torch.compile async TP, eager and replayed as CUDA graphs, D = 2", (torchrun("2", "benchmarks/tp_layer.py", "--reps", "20", "--cuda-graph"),), quick=("--sizes", "8192", "--reps", "5", "--warmup", "2")),
    Step("tp-layer-d4", "the tensor-parallel transformer layer at D = 4", (torchrun("4", "benchmarks/tp_layer.py", "--reps", "20", "--cuda-graph"),), quick=("--sizes", "8192", "--reps", "5", "--warmup", "2"), gpus=4),
    Step("tp-d1", "the tensor-parallel MLP and layer on a mesh of one device (one rank, collectives as copies) against eager TP on one rank", (torchrun("1", "benchmarks/tp_mlp.py", "--hidden", "4096", "--sizes", "4096", "--reps", "5", "--warmup", "2", "--no-torch-compile"), torchrun("1", "benchmarks/tp_layer.py", "--hidden", "4096", "--sizes", "4096", "--reps", "5", "--warmup", "2", "--no-torch-compile")), gpus=1),
    Step("calibrate", "hir-calibrate: this machine's device constants for the cost model (writes its cache)", ((PY, "-m", "hir.tools.calibrate", "--gpus", GPUS),)),
    Step("tp-mlp-defaults", "the tensor-parallel MLP block compiled with hir.compile's defaults against eager, eager replayed, the serial form and the copy-engine pipelines (as written, by shard, two chunks); H = 4096 and 8192", tuple(torchrun(GPUS, "benchmarks/tp_mlp.py", "--hidden", h, "--sizes", "4096,8192,16384,32768", "--reps", "15", "--warmup", "3", "--cuda-graph", "--no-torch-compile", "--variants", TP_MLP_DEFAULTS) for h in ("4096", "8192")), quick=("--sizes", "4096", "--reps", "5", "--warmup", "2")),
    Step("tp-mlp-defaults-compile", "hir.compile's defaults against torch.compile's async TP at M = 16384, H = 4096 and 8192", tuple(torchrun(GPUS, "benchmarks/tp_mlp.py", "--hidden", h, "--sizes", "16384", "--reps", "15", "--warmup", "3", "--variants", "default:4:chunks=1") for h in ("4096", "8192")), quick=("--reps", "5", "--warmup", "2")),
    Step("tp-mlp-train", "the MLP block's training step (forward + backward) on one GPU, hir.compile(..., training=True) against eager and torch.compile; H = 4096 and 8192", ((PY, "benchmarks/tp_mlp_train.py", "--sizes", "8192,16384", "--reps", "10", "--warmup", "3", "--cuda-graph"),), quick=("--hidden", "4096", "--sizes", "8192", "--reps", "5", "--warmup", "2")),
    *(Step(f"tp-mlp-train-tp{'' if d == '2' else '-d4'}", f"the tensor-parallel MLP block's training step (forward + backward) on a mesh, hir.compile(..., training=True) against eager TP with autograd and torch.compile async TP; D = {d}, H = 4096 and 8192, M = 16384", (torchrun(d, "benchmarks/tp_mlp_train.py", "--hidden", "4096,8192", "--sizes", "16384", "--reps", "10", "--warmup", "3"),), quick=("--hidden", "4096", "--reps", "3", "--warmup", "1"), gpus=int(d)) for d in ("2", "4")),
    *(Step(f"tp-layer-train-tp{'' if d == '2' else '-d4'}", f"the TP transformer layer's training step (benchmarks/tp_layer.py's layer: attention of each rank's heads on fused kernels, forward and backward) on a mesh, against eager TP with autograd and torch.compile async TP; D = {d}, H = 4096 and 8192, M = 16384", (torchrun(d, "benchmarks/tp_mlp_train.py", "--block", "layer", "--hidden", "4096,8192", "--sizes", "16384", "--reps", "10", "--warmup", "3", "--variants", "default:4:chunks=1,default:4:chunks=2"),), quick=("--hidden", "4096", "--reps", "3", "--warmup", "1"), gpus=int(d)) for d in ("2", "4")),
)
# fmt: on


def resolve(command: Command, gpus: int, out: Path, quick: Sequence[str]) -> list[str]:
    return [arg.replace(GPUS, str(gpus)).replace(OUT, str(out)) for arg in command] + list(quick)


def shown(command: Sequence[str], env: dict[str, str]) -> str:
    """The command as one would type it (`python` for this interpreter)."""
    argv = ["python" if arg == PY else arg for arg in command]
    return shlex.join([f"{k}={v}" for k, v in env.items()] + argv)


def run_command(argv: list[str], env: dict[str, str], out, err, timeout: float) -> int:
    """Runs one command in its own process group, which is ended if it outlasts `timeout`."""
    process = subprocess.Popen(
        argv, cwd=REPO, env={**os.environ, **env}, stdout=out, stderr=err, start_new_session=True
    )
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            os.killpg(process.pid, sig)
            try:
                process.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                continue
        err.write(f"\nrun_all: timed out after {timeout:.0f} s\n".encode())
        return 124


# What environment.txt records: the GPUs, their topology, the versions, the commit.
PROBES: list[list[str]] = [
    ["nvidia-smi"],
    ["nvidia-smi", "topo", "-m"],
    [PY, "-c", "import torch, xdsl; print('torch', torch.__version__, 'CUDA', torch.version.cuda, "
     "'NCCL', torch.cuda.nccl.version() if torch.cuda.is_available() else None, 'xdsl', xdsl.__version__)"],
    ["git", "describe", "--always", "--dirty"],
]  # fmt: skip


def record_environment(path: Path, env: dict[str, str]) -> None:
    with path.open("w") as f:
        f.write(f"{datetime.datetime.now().isoformat(timespec='seconds')}; environment: {shown([], env)}\n")
        for probe in PROBES:
            f.write(f"\n$ {shlex.join(probe)}\n")
            f.flush()
            try:
                subprocess.run(probe, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, timeout=60, check=False)
            except (OSError, subprocess.TimeoutExpired) as err:
                f.write(f"{err}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, help="processes for the benchmarks (default: every visible GPU)")
    parser.add_argument("--out", type=Path, default=Path("benchmark-results"), help="where logs and tables go")
    parser.add_argument("--only", help="comma list of step names (see --list)")
    parser.add_argument("--quick", action="store_true", help="benchmarks on one small size, few repetitions")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per command before it is ended")
    parser.add_argument("--multicast", action="store_true", help="leave NVLink SHARP / multicast settings alone")
    parser.add_argument("--list", action="store_true", help="list the steps and exit")
    parser.add_argument("--dry-run", action="store_true", help="print the commands instead of running them")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)

    steps = list(STEPS)
    if args.only:
        names = args.only.split(",")
        unknown = sorted(set(names) - {s.name for s in STEPS})
        if unknown:
            parser.error(f"no step {', '.join(unknown)} (steps: {', '.join(s.name for s in STEPS)})")
        steps = [s for s in STEPS if s.name in names]
    if args.list:
        for step in steps:
            print(f"{step.name:16} {step.what}")
        return 0
    gpus = args.gpus if args.gpus is not None else _visible_gpus()
    if not gpus and any(step.min_gpus for step in steps):
        if not args.dry_run:
            parser.error("no CUDA GPU is visible (--dry-run shows the commands)")
        gpus = 2
    env = {"PYTHONUNBUFFERED": "1", **({} if args.multicast else NO_MULTICAST)}
    out = args.out.resolve()

    if args.dry_run:
        for step in steps:
            print(f"# {step.name}: {step.what}")
            for command in step.commands:
                print(shown(resolve(command, gpus, out, step.quick if args.quick else ()), {**env, **step.env}))
        return 0

    out.mkdir(parents=True, exist_ok=True)
    record_environment(out / "environment.txt", env)
    summary = [f"# GPU runs, {datetime.date.today()}", "", f"{gpus} GPUs; environment in environment.txt", ""]
    failed = []
    for step in steps:
        started = time.monotonic()
        if gpus < step.min_gpus:
            status = f"skipped: needs {step.min_gpus} GPUs"
            commands: list[list[str]] = []
        else:
            commands = [resolve(c, gpus, out, step.quick if args.quick else ()) for c in step.commands]
            codes = []
            with (out / f"{step.name}.out").open("wb") as stdout, (out / f"{step.name}.err").open("wb") as stderr:
                for command in commands:
                    header = f"$ {shown(command, {**env, **step.env})}\n".encode()
                    stdout.write(header)
                    stderr.write(header)
                    stdout.flush()
                    stderr.flush()
                    codes.append(run_command(command, {**env, **step.env}, stdout, stderr, args.timeout))
            bad = sum(code != 0 for code in codes)
            status = "ok" if not bad else f"FAILED ({bad} of {len(codes)} commands)"
            if bad:
                failed.append(step.name)
        seconds = time.monotonic() - started
        print(f"run_all: {step.name}: {status} ({seconds:.0f} s)", file=sys.stderr, flush=True)
        summary += [f"## {step.name}: {status} ({seconds:.0f} s)", "", step.what, ""]
        if commands:
            summary += ["```", (out / f"{step.name}.out").read_text(errors="replace").rstrip(), "```", ""]
        (out / "summary.md").write_text("\n".join(summary))
    print(f"run_all: results in {out}/summary.md", file=sys.stderr)
    if failed:
        print(f"run_all: failed: {', '.join(failed)} (see their .err files)", file=sys.stderr)
    return 1 if failed else 0


def _visible_gpus() -> int:
    import torch

    return torch.cuda.device_count()


if __name__ == "__main__":
    sys.exit(main())
