"""
Compile time of `hir-opt --stream-lowering` on generated fusion modules: parse, verify, each stage
of the pipeline, print, the whole `hir-opt` run, and how each grows with the module.

    python benchmarks/compile_time.py                       # the default sizes, markdown tables
    python benchmarks/compile_time.py --sizes chain:1000,2000 --repeats 3
    python benchmarks/compile_time.py --check               # exit 1 when a target below is missed
    python benchmarks/compile_time.py --emit mix:1000 > mix.mlir

Modules (deterministic):

- `chain`: one fusable chain of stream-parallel ops on x[64, 32], alternating binary ops (each a
  standalone host op, so each its own unit and stream loop) and unary ops; hir-loop-fusion merges
  all the loops into one.
- `unary`: one chain of stream-parallel unary ops, which fusion-segment merges into one segment.
- `mix`: a realistic mix of layers on h[64, 32] (stream axis 0, or `stream(4)` chunks): matmul +
  bias + activation, fused elementwise runs, row normalizations (sum, broadcast, div), linear
  layers, permutes and casts there and back, serial stretches (a set to a serial value, work on
  the whole tensor, a set back), a second output every few layers.

Times are CPU seconds of this process (`time.process_time`), the median of `--repeats` runs, each
on a freshly parsed module. `verify` is one verification of the lowered module (hir-opt verifies
the input after parsing and the result after the pipeline, `--verify-each-stage` after every
stage: those of the default are in `hir-opt`). Stages come from the pipeline pass itself
(`expand_stages`), as `hir-opt --time-passes` reports them; `passes` is their sum; `hir-opt` is
the whole command run in this process (read, parse, verify, the pipeline, verify, print to a
file; the interpreter's start and the imports, about 0.6 s, are not in it).

The growth table gives, for each phase, the exponent k of time ~ n^k between consecutive sizes
(1.0: linear; doubling the module multiplies the time by 2^k, 2.1x is k = 1.07). Targets that
`--check` enforces: the 1000-op chain's `hir-opt` <= 3 s; for the largest `mix`, `passes` <= 3x
parse + verify + print; k <= 1.07 (doubling <= 2.1x) between the two largest sizes of each kind for `passes`, `hir-opt`
and every phase that takes at least 10 % of `passes` there (smaller ones are timer noise).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.printer import Printer

from hir.api import make_context
from hir.collection import fewer_collections
from hir.diagnostics import LocatedParser, verify_located
from hir.passes import get_all_hir_passes
from hir.pipeline import expand_stages, parse_pass_pipeline
from hir.tools.hir_opt import HirOptMain

ROWS, COLS = 64, 32
STREAM = f"tensor<{ROWS}x{COLS}xf32, #fusion.parallel<[stream, serial]>>"
CHUNKED = f"tensor<{ROWS}x{COLS}xf32, #fusion.parallel<[stream(4), serial]>>"
SERIAL = f"tensor<{ROWS}x{COLS}xf32>"
UNARY = ("exp", "tanh", "neg", "abs", "relu")
BINARY = ("add", "mul", "sub", "maximum")


class _Writer:
    """Lines of one function body with fresh value names, counting fusion ops."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ops = 0
        self._next = 0

    def op(self, text: str) -> str:
        """Emits `%vN = text`, returns `%vN`."""
        name = f"%v{self._next}"
        self._next += 1
        self.lines.append(f"  {name} = fusion.{text}")
        self.ops += 1
        return name


def _function(w: _Writer, results: Sequence[tuple[str, str]]) -> str:
    args = [
        f"%x: {SERIAL}",
        f"%y: {SERIAL}",
        f"%w: tensor<{COLS}x{COLS}xf32>",
        f"%bias: tensor<{COLS}xf32>",
    ]
    values = ", ".join(v for v, _ in results)
    types = ", ".join(t for _, t in results)
    return "\n".join(
        [
            f"func.func @main({', '.join(args)}) -> ({types}) {{",
            *w.lines,
            f"  func.return {values} : {types}",
            "}",
            "",
        ]
    )


def chain_module(n: int) -> str:
    """n stream-parallel ops in one chain, binary and unary alternating."""
    w = _Writer()
    h = w.op(f"set %x : {SERIAL} -> {STREAM}")
    while w.ops < n:
        k = w.ops
        if k % 2:
            h = w.op(f"{BINARY[k // 2 % len(BINARY)]} {h}, %y : {STREAM}, {SERIAL} -> {STREAM}")
        else:
            h = w.op(f"{UNARY[k // 2 % len(UNARY)]} {h} : {STREAM} -> {STREAM}")
    return _function(w, [(h, STREAM)])


def unary_module(n: int) -> str:
    """n stream-parallel unary ops in one chain."""
    w = _Writer()
    h = "%x"
    t = SERIAL
    while w.ops < n:
        h = w.op(f"{UNARY[w.ops % len(UNARY)]} {h} : {t} -> {STREAM}")
        t = STREAM
    return _function(w, [(h, STREAM)])


# -- the realistic mix: layers that each take h (of type `t`) and return the new h -----------------


def _mlp(w: _Writer, h: str, t: str) -> str:
    m = w.op(f"matmul {h}, %w : {t}, tensor<{COLS}x{COLS}xf32> -> {t}")
    b = w.op(f"broadcast %bias dims = [0] : tensor<{COLS}xf32> -> {t}")
    a = w.op(f"add {m}, {b} : {t}, {t} -> {t}")
    return w.op(f"relu {a} : {t} -> {t}")


def _elementwise_run(w: _Writer, h: str, t: str, rng: random.Random) -> str:
    for _ in range(rng.randint(2, 5)):
        h = w.op(f"{rng.choice(UNARY)} {h} : {t} -> {t}")
    return h


def _normalize(w: _Writer, h: str, t: str) -> str:
    """h / broadcast(sum(exp(h), axis 1)): a softmax-like row normalization."""
    rows = t.replace(f"{ROWS}x{COLS}xf32", f"{ROWS}xf32").replace(", serial]", "]")
    e = w.op(f"exp {h} : {t} -> {t}")
    s = w.op(f"sum {e} dims = [1] : {t} -> {rows}")
    b = w.op(f"broadcast {s} dims = [1] : {rows} -> {t}")
    return w.op(f"div {e}, {b} : {t}, {t} -> {t}")


def _linear(w: _Writer, h: str, t: str) -> str:
    y = w.op(f"linear {h}, %w, %bias : {t}, tensor<{COLS}x{COLS}xf32>, tensor<{COLS}xf32> -> {t}")
    return w.op(f"tanh {y} : {t} -> {t}")


def _permute_twice(w: _Writer, h: str, t: str) -> str:
    """To [cols, rows] (the stream axis moves to axis 1) and back."""
    transposed = f"tensor<{COLS}x{ROWS}xf32, #fusion.parallel<[serial, stream]>>"
    if t == SERIAL:
        transposed = f"tensor<{COLS}x{ROWS}xf32>"
    elif t == CHUNKED:
        transposed = f"tensor<{COLS}x{ROWS}xf32, #fusion.parallel<[serial, stream(4)]>>"
    p = w.op(f"permute {h} perm = [1, 0] : {t} -> {transposed}")
    q = w.op(f"neg {p} : {transposed} -> {transposed}")
    return w.op(f"permute {q} perm = [1, 0] : {transposed} -> {t}")


def _cast_twice(w: _Writer, h: str, t: str) -> str:
    half = t.replace("xf32", "xbf16")
    c = w.op(f"cast {h} : {t} -> {half}")
    a = w.op(f"abs {c} : {half} -> {half}")
    return w.op(f"cast {a} : {half} -> {t}")


def _residual(w: _Writer, h: str, t: str) -> str:
    m = w.op(f"mul {h}, %y : {t}, {SERIAL} -> {t}")
    return w.op(f"add {m}, {h} : {t}, {t} -> {t}")


Layer = Callable[[_Writer, str, str], str]
_LAYERS: tuple[Layer, ...] = (_mlp, _normalize, _linear, _permute_twice, _cast_twice, _residual)


def mix_module(n: int, seed: int = 0) -> str:
    """About n fusion ops: layers drawn at random, the stream iteration changing now and then."""
    rng = random.Random(seed)
    w = _Writer()
    t = STREAM
    h = w.op(f"set %x : {SERIAL} -> {t}")
    outputs: list[tuple[str, str]] = []
    while w.ops < n:
        roll = rng.random()
        if roll < 0.12:  # a change of iteration: a new loop that cannot fuse with the last one
            new = rng.choice([x for x in (STREAM, STREAM, CHUNKED, SERIAL) if x != t])
            h, t = w.op(f"set {h} : {t} -> {new}"), new
        elif roll < 0.3:
            h = _elementwise_run(w, h, t, rng)
        else:
            h = rng.choice(_LAYERS)(w, h, t)
        if rng.random() < 0.05 and len(outputs) < 16:
            outputs.append((h, t))
    return _function(w, [*outputs, (h, t)])


GENERATORS: dict[str, Callable[[int], str]] = {"chain": chain_module, "unary": unary_module, "mix": mix_module}


# -- measurement ----------------------------------------------------------------------------------

PIPELINE = "stream-lowering"
DEFAULT_SIZES = "chain:100,300,1000,3000;unary:1000,3000;mix:1000,3000,10000"
MAX_EXPONENT = math.log2(2.1)  # doubling the module may cost at most 2.1x
CHAIN_TARGET_OPS, CHAIN_TARGET_SECONDS = 1000, 3.0
PASSES_OVER_IO = 3.0  # passes <= 3x parse + verify + print, on the largest mix
NOISE_SHARE = 0.1


@dataclass
class Sample:
    """CPU seconds of each phase for one module."""

    kind: str
    ops: int
    phases: dict[str, list[float]] = field(default_factory=dict)

    def add(self, phase: str, seconds: float) -> None:
        self.phases.setdefault(phase, []).append(seconds)

    def median(self, phase: str) -> float:
        return statistics.median(self.phases[phase])


def _timed(fn: Callable[..., object], *args: object) -> tuple[float, object]:
    """CPU seconds of fn(*args) after a collection (so that none of an earlier phase's garbage is billed), and its result."""
    gc.collect()
    started = time.process_time()
    result = fn(*args)
    return time.process_time() - started, result


def _one_run(sample: Sample, text: str, source: str, stages: Sequence[ModulePass]) -> None:
    """Parse, every stage, verify and print, each timed on its own."""
    ctx = make_context()
    seconds, module = _timed(LocatedParser(ctx, text, source).parse_module)
    assert isinstance(module, ModuleOp)
    sample.add("parse", seconds)
    passes = 0.0
    for stage in stages:
        seconds, _ = _timed(stage.apply, ctx, module)
        sample.add(stage.name, seconds)
        passes += seconds
    sample.add("passes", passes)
    sample.add("verify", _timed(verify_located, module)[0])
    sample.add("print", _timed(Printer(stream=StringIO()).print_op, module)[0])


def measure(kind: str, n: int, repeats: int) -> Sample:
    text = GENERATORS[kind](n)
    sample = Sample(kind, text.count("= fusion."))
    stages = expand_stages(parse_pass_pipeline(PIPELINE, get_all_hir_passes()))
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, f"{kind}.mlir")
        with open(source, "w") as f:
            f.write(text)
        command = ["-p", PIPELINE, source, "-o", os.path.join(folder, "out.mlir")]
        for _ in range(repeats):
            with fewer_collections():  # the collector's thresholds of hir-opt and hir.run_pipeline
                _one_run(sample, text, source, stages)
            sample.add("hir-opt", _timed(HirOptMain(command).run)[0])
    return sample


def _phases(samples: Sequence[Sample]) -> list[str]:
    return list(samples[0].phases)


def table(samples: Sequence[Sample]) -> list[str]:
    """Markdown: one row per module size, one column per phase (CPU seconds)."""
    phases = _phases(samples)
    lines = [f"| {samples[0].kind} ops | " + " | ".join(phases) + " |", "|---:" * (len(phases) + 1) + "|"]
    lines += [f"| {s.ops} | " + " | ".join(f"{s.median(p):.3f}" for p in phases) + " |" for s in samples]
    return lines


def exponent(small: Sample, large: Sample, phase: str) -> float:
    """k of time ~ n^k between the two samples (nan when a time is 0)."""
    a, b = small.median(phase), large.median(phase)
    if a <= 0 or b <= 0:
        return math.nan
    return math.log(b / a) / math.log(large.ops / small.ops)


def growth_table(samples: Sequence[Sample]) -> list[str]:
    """Markdown: the exponent k (time ~ n^k) of every phase between consecutive sizes."""
    phases = _phases(samples)
    lines = [f"| {samples[0].kind} ops | " + " | ".join(phases) + " |", "|---:" * (len(phases) + 1) + "|"]
    for small, large in itertools.pairwise(samples):
        row = " | ".join(f"{exponent(small, large, p):.2f}" for p in phases)
        lines.append(f"| {small.ops} -> {large.ops} | {row} |")
    return lines


def checks(by_kind: dict[str, list[Sample]]) -> list[tuple[bool, str]]:
    """The targets of the module docstring that these samples can decide: (met, description)."""
    results: list[tuple[bool, str]] = []
    for s in by_kind.get("chain", []):
        if s.ops == CHAIN_TARGET_OPS:
            t = s.median("hir-opt")
            results.append((t <= CHAIN_TARGET_SECONDS, f"chain {s.ops}: hir-opt {t:.2f} s <= {CHAIN_TARGET_SECONDS} s"))
    if by_kind.get("mix"):
        s = by_kind["mix"][-1]
        io = s.median("parse") + s.median("verify") + s.median("print")
        ratio = s.median("passes") / io
        results.append((ratio <= PASSES_OVER_IO, f"mix {s.ops}: passes / (parse + verify + print) = {ratio:.2f} <= 3"))
    for kind, samples in by_kind.items():
        if len(samples) < 2:
            continue
        small, large = samples[-2], samples[-1]
        total = large.median("passes")
        for phase in _phases(samples):
            if phase in ("passes", "hir-opt") or large.median(phase) >= NOISE_SHARE * total:
                k = exponent(small, large, phase)
                results.append(
                    (
                        not k > MAX_EXPONENT,
                        f"{kind} {small.ops} -> {large.ops}: {phase} k = {k:.2f} <= {MAX_EXPONENT:.2f}",
                    )
                )
    return results


def parse_sizes(spec: str) -> dict[str, list[int]]:
    """`chain:100,300;mix:1000` -> {"chain": [100, 300], "mix": [1000]}."""
    sizes: dict[str, list[int]] = {}
    for part in spec.split(";"):
        kind, _, numbers = part.partition(":")
        if kind not in GENERATORS or not numbers:
            raise argparse.ArgumentTypeError(
                f"expected KIND:N,N,... with KIND one of {', '.join(GENERATORS)}: {part!r}"
            )
        sizes[kind] = sorted(int(x) for x in numbers.split(","))
    return sizes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1].strip())
    parser.add_argument("--sizes", type=parse_sizes, default=DEFAULT_SIZES, help=f"default: {DEFAULT_SIZES}")
    parser.add_argument("--repeats", type=int, default=3, help="runs per module; times are medians")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--emit", metavar="KIND:N", help="print the module KIND:N and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.emit:
        kind, n = args.emit.split(":")
        sys.stdout.write(GENERATORS[kind](int(n)))
        return 0
    sizes = parse_sizes(args.sizes) if isinstance(args.sizes, str) else args.sizes
    by_kind: dict[str, list[Sample]] = {}
    for kind, ns in sizes.items():
        for n in ns:
            by_kind.setdefault(kind, []).append(measure(kind, n, args.repeats))
            print(f"measured {kind} {n}", file=sys.stderr, flush=True)
        print("\n".join(["", f"CPU seconds, median of {args.repeats}:", "", *table(by_kind[kind])]), flush=True)
        if len(ns) > 1:
            print("\n".join(["", "Growth, k of time ~ n^k:", "", *growth_table(by_kind[kind])]), flush=True)
    results = checks(by_kind)
    print("\nTargets:\n")
    for met, what in results:
        print(f"- {'ok' if met else 'MISSED'}: {what}")
    return 1 if args.check and not all(met for met, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
