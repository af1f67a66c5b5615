"""
Compile time scales linearly: every phase of `hir-opt --stream-lowering` (parse, each stage,
verify, print) makes about twice the Python function calls on a module twice as large.

Calls, not seconds: the count is deterministic, so the test is exact on a loaded 2-core machine
where timings are not. A pass that rescans what it has built (the quadratic loop fusion and
segment merging this replaced) makes ~4x the calls when the module doubles, which fails here at
a few hundred ops. Work done inside one C call (a dict copied per op) is not counted: the
benchmark, benchmarks/compile_time.py, times that.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from hir.api import make_context
from hir.diagnostics import LocatedParser, verify_located
from hir.passes import get_all_hir_passes
from hir.passes.propagate_sharding import PropagateShardingPass
from hir.passes.ring_intermediates import RingIntermediatesPass
from hir.pipeline import expand_stages, parse_pass_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import compile_time  # benchmarks/ is a folder of scripts, not a package

MAX_GROWTH = 2.5
"""Calls at 2n over calls at n: 2 for linear work (a little less with fixed costs, up to ~2.15 for
the mix, whose second half has more loops), ~2.25 for n log n at these sizes, 4 for quadratic."""


IDLE_BY_DEFAULT = {"fusion-stream-overlap"}


def _calls(fn: Callable[..., object], *args: object) -> tuple[int, object]:
    profile = cProfile.Profile()
    result = profile.runcall(fn, *args)
    return pstats.Stats(profile).total_calls, result  # type: ignore[attr-defined]


def phase_calls(text: str) -> dict[str, int]:
    """Python function calls of each phase of `hir-opt --stream-lowering` on `text`."""
    ctx = make_context()
    calls: dict[str, int] = {}
    calls["parse"], module = _calls(LocatedParser(ctx, text, "scaling.mlir").parse_module)
    assert isinstance(module, ModuleOp)
    calls["verify input"], _ = _calls(verify_located, module)
    for stage in expand_stages(parse_pass_pipeline("stream-lowering", get_all_hir_passes())):
        calls[stage.name], _ = _calls(stage.apply, ctx, module)
    calls["verify"], _ = _calls(verify_located, module)
    calls["print"], _ = _calls(Printer().print_op, module)
    return calls


@pytest.mark.parametrize(("kind", "n"), [("chain", 60), ("unary", 60), ("mix", 120)])
def test_every_phase_is_linear(kind: str, n: int, capsys: pytest.CaptureFixture[str]) -> None:
    phase_calls(compile_time.GENERATORS[kind](n // 4))  # first-use costs (lazy imports, caches) out of the way
    small = phase_calls(compile_time.GENERATORS[kind](n))
    large = phase_calls(compile_time.GENERATORS[kind](2 * n))
    capsys.readouterr()  # what Printer() wrote to stdout
    growth = {phase: large[phase] / small[phase] for phase in small}
    too_fast = {phase: round(g, 2) for phase, g in growth.items() if g > MAX_GROWTH}
    assert not too_fast, f"{kind}: calls grew more than {MAX_GROWTH}x when the module doubled: {too_fast}"
    # Every phase does work per op (else it measured nothing), but for the one the default options
    # switch off: overlap=always leaves the module as written.
    working = {phase: g for phase, g in growth.items() if phase not in IDLE_BY_DEFAULT}
    assert min(working.values()) > 1.3, growth


def test_a_quadratic_phase_fails_the_check() -> None:
    """The measure can fail: a phase that walks the module once per op grows ~4x per doubling."""

    def quadratic(module: ModuleOp) -> None:
        for _ in module.walk():
            for op in module.walk():
                op.name  # noqa: B018

    growth = []
    for n in (40, 80):
        module = LocatedParser(make_context(), compile_time.chain_module(n), "q.mlir").parse_module()
        growth.append(_calls(quadratic, module)[0])
    assert growth[1] / growth[0] > 3.5


def sharded_chain(n: int, sharded_input: bool) -> str:
    """n unannotated elementwise ops between a sharded input (forward) or a sharded result (backward)."""
    rows = "tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>"
    plain = "tensor<2x8xf32>"
    source = rows if sharded_input else plain
    lines = [f"func.func @main(%v0: {source}, %w: {plain}) -> {rows} {{"]
    for k in range(n):
        operand = source if k == 0 else plain
        op = "add" if k % 2 else "relu"
        args = f"%v{k}, %w : {operand}, {plain}" if op == "add" else f"%v{k} : {operand}"
        lines.append(f"  %v{k + 1} = fusion.{op} {args} -> {plain}")
    lines.append(f"  %out = fusion.exp %v{n} : {plain} -> {rows}")
    lines.append(f"  func.return %out : {rows}")
    return "\n".join([*lines, "}"])


@pytest.mark.parametrize("traversal", ["forward-backward", "backward-forward"])
@pytest.mark.parametrize("sharded_input", [True, False], ids=["from_input", "from_result"])
def test_propagate_sharding_is_linear(traversal: str, sharded_input: bool) -> None:
    """fusion-propagate-sharding (not in the default stream-lowering) shards a chain in linear calls."""
    calls = []
    for n in (60, 120):
        module = LocatedParser(make_context(), sharded_chain(n, sharded_input), "chain.mlir").parse_module()
        count, _ = _calls(PropagateShardingPass(traversal=traversal).apply, make_context(), module)
        sharded = str(module).count("-> tensor<2x8xf32, #fusion.parallel<[didx, serial]")
        assert sharded == n + 2  # every op, and the function type
        calls.append(count)
    assert 1.6 < calls[1] / calls[0] < MAX_GROWTH, calls


def freed_loops(n: int) -> str:
    """n stream loops, each with an intermediate that becomes a ring; every one freed at the end."""
    view = "memref<32xf32, strided<[1], offset: ?>>"
    whole = "memref<64x32xf32>"
    lines = [
        f"func.func @main(%x: {whole}) -> {whole} {{",
        "  %c0 = arith.constant 0 : index",
        "  %c1 = arith.constant 1 : index",
        "  %c64 = arith.constant 64 : index",
        "  %main = hir.get_current_stream",
        "  %n = hir.num_streams",
        f"  %out = hir.allocate() : {whole}",
    ]
    for k in range(n):
        lines += [
            f"  %t{k} = hir.allocate() : {whole}",
            f"  hir.stream_for %i{k} = %c0 to %c64 step %c1 streams(%s{k}) of %n from %main {{",
            f"    %x{k} = hir.alias_select %x[%i{k}] axis 0 : {whole} -> {view}",
            f"    %w{k} = hir.alias_select %t{k}[%i{k}] axis 0 : {whole} -> {view}",
            f"    hir.launch ins(%a = %x{k} : {view}) outs(%w{k} : {view}) {{",
            "      %r = fusion.relu %a : tensor<32xf32> -> tensor<32xf32>",
            "      hir.yield %r : tensor<32xf32>",
            "    }",
            f"    %o{k} = hir.alias_select %out[%i{k}] axis 0 : {whole} -> {view}",
            f"    hir.launch ins(%b = %w{k} : {view}) outs(%o{k} : {view}) {{",
            "      %m = fusion.neg %b : tensor<32xf32> -> tensor<32xf32>",
            "      hir.yield %m : tensor<32xf32>",
            "    }",
            "  }",
        ]
    lines += [f"  hir.deallocate %t{k} : {whole}" for k in range(n)]
    return "\n".join([*lines, f"  func.return %out : {whole}", "}"])


def test_ring_intermediates_is_linear_when_buffers_are_freed_at_the_end() -> None:
    """
    Whether each free follows its loop is decided by position, not by walking the block from the
    loop (`is_before_in_block`), which steps over the later loops: quadratic in `next_op` steps,
    a small share of all calls at these sizes, so those steps are counted on their own.
    """
    calls, steps = [], []
    for n in (40, 80):
        module = LocatedParser(make_context(), freed_loops(n), "freed.mlir").parse_module()
        profile = cProfile.Profile()
        profile.runcall(RingIntermediatesPass().apply, make_context(), module)
        stats = pstats.Stats(profile)
        calls.append(stats.total_calls)  # type: ignore[attr-defined]
        steps.append(sum(v[1] for k, v in stats.stats.items() if k[2] == "next_op"))  # type: ignore[attr-defined]
        assert str(module).count("hir.deallocate %t") == n
        assert str(module).count("memref<?x32xf32>") >= 2 * n  # every intermediate became a ring
    assert 1.6 < calls[1] / calls[0] < MAX_GROWTH, calls
    assert steps[1] <= MAX_GROWTH * max(steps[0], 1), steps
