"""
`fusion-segment` through its Python API: custom merge predicates, the hard rules they cannot
override, and random fusion DAGs (hypothesis) whose segmented form must verify, stay acyclic and
compute what the unsegmented module computes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

import hir
from hir.dialects import fusion
from hir.passes.fusion_segment import (
    POLICIES,
    FusionSegmentPass,
    Group,
    ShouldMerge,
    is_resharding,
    segment_function,
    segment_module,
    stream_compatible,
)
from hir.runtime.inputs import random_inputs

T = "tensor<2x8xf32>"
STREAM = "tensor<2x8xf32, #fusion.parallel<[stream, serial]>>"
STREAM_2 = "tensor<2x8xf32, #fusion.parallel<[stream(2), serial]>>"
STREAM_AXIS_1 = "tensor<2x8xf32, #fusion.parallel<[serial, stream]>>"
SHARDED = "tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>"
PALETTES = ((T,), (STREAM,), (T, STREAM), (T, SHARDED), (T, STREAM, STREAM_2, STREAM_AXIS_1, SHARDED))
UNARY = ("neg", "abs", "exp", "relu", "tanh", "set")
BINARY = ("add", "sub", "mul", "div", "maximum")

CHAIN = f"""
func.func @main(%x: {T}, %y: {T}) -> ({T}, {T}) {{
  %e = fusion.exp %x : {T} -> {T}
  %n = fusion.neg %e : {T} -> {T}
  %a = fusion.add %n, %y : {T}, {T} -> {T}
  %r = fusion.relu %a : {T} -> {T}
  %x2 = fusion.exp %r : {T} -> {T}
  %t = fusion.tanh %x2 : {T} -> {T}
  func.return %t, %e : {T}, {T}
}}
"""


# -- helpers --------------------------------------------------------------------------------------


def main_of(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == "main")


def top_level(module: ModuleOp) -> list[Operation]:
    return list(main_of(module).body.block.ops)


def segments_of(module: ModuleOp) -> list[fusion.SegmentOp]:
    return [op for op in top_level(module) if isinstance(op, fusion.SegmentOp)]


def op_names(ops: Sequence[Operation]) -> list[str]:
    return [op.name.removeprefix("fusion.") for op in ops]


def shape_of_body(module: ModuleOp) -> list[str | list[str]]:
    """Top-level ops by name, a segment as the list of its ops' names."""
    return [
        op_names(op.inner_ops) if isinstance(op, fusion.SegmentOp) else op.name.removeprefix("fusion.")
        for op in top_level(module)
    ]


def fusion_op_count(module: ModuleOp) -> int:
    return sum(isinstance(op, fusion.FusionOp) for op in module.walk())


def assert_defined_before_use(block: Block) -> None:
    """Every operand is a block argument or an earlier op's result of the same block: no cycle,
    and segments (isolated from above) see only their own arguments."""
    defined: set[SSAValue] = set(block.args)
    for op in block.ops:
        for operand in op.operands:
            assert operand in defined, f"{op.name} uses a value not defined before it"
        for region in op.regions:
            for inner in region.blocks:
                assert_defined_before_use(inner)
        defined.update(op.results)


def check_hard_rules(module: ModuleOp) -> None:
    for segment in segments_of(module):
        ops = segment.inner_ops
        assert len(ops) >= 2
        assert not any(is_resharding(op) for op in ops)
        assert stream_compatible(ops)


def assert_same_outputs(reference: ModuleOp, segmented: ModuleOp, seed: int) -> None:
    inputs = random_inputs(main_of(reference).function_type.inputs.data, seed=seed)
    expected = hir.execute(reference, inputs)
    actual = hir.execute(segmented, [t.clone() for t in inputs])
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=0, atol=0, equal_nan=True)


def always(_a: Group, _b: Group) -> bool:
    return True


def never(_a: Group, _b: Group) -> bool:
    return False


def only_exp(a: Group, b: Group) -> bool:
    return all(isinstance(op, fusion.ExpOp) for op in a.ops + b.ops)


# -- custom predicates ----------------------------------------------------------------------------


def test_always_merges_everything_legal() -> None:
    module = hir.parse(CHAIN)
    made = segment_function(main_of(module), always)
    assert len(made) == 1
    assert shape_of_body(module) == [["exp", "neg", "add", "relu", "exp", "tanh"], "func.return"]
    assert_same_outputs(hir.parse(CHAIN), module, seed=1)


def test_never_keeps_ops_bare() -> None:
    module = hir.parse(CHAIN)
    assert segment_module(module, never) == []
    assert str(module) == str(hir.parse(CHAIN))


def test_only_exp_merges_exp_chains() -> None:
    text = f"""
    func.func @main(%x: {T}) -> {T} {{
      %a = fusion.exp %x : {T} -> {T}
      %b = fusion.exp %a : {T} -> {T}
      %c = fusion.neg %b : {T} -> {T}
      %d = fusion.exp %c : {T} -> {T}
      %e = fusion.exp %d : {T} -> {T}
      %f = fusion.exp %e : {T} -> {T}
      func.return %f : {T}
    }}
    """
    module = hir.parse(text)
    segment_module(module, only_exp)
    assert shape_of_body(module) == [["exp", "exp"], "neg", ["exp", "exp", "exp"], "func.return"]
    assert_same_outputs(hir.parse(text), module, seed=2)


def test_with_predicate_is_a_module_pass() -> None:
    module = hir.parse(CHAIN)
    FusionSegmentPass.with_predicate(only_exp).apply(hir.make_context(), module)
    assert shape_of_body(module) == ["exp", "neg", "add", "relu", "exp", "tanh", "func.return"]
    FusionSegmentPass.with_predicate(always).apply(hir.make_context(), module)
    assert len(segments_of(module)) == 1


@dataclass
class Recorder:
    """A predicate that answers like `inner` and records what it was asked."""

    inner: ShouldMerge
    calls: list[tuple[Group, Group]]

    def __call__(self, producer: Group, consumer: Group) -> bool:
        self.calls.append((producer, consumer))
        return self.inner(producer, consumer)


def test_predicate_sees_producer_then_consumer_in_program_order() -> None:
    module = hir.parse(CHAIN)
    function = main_of(module)
    order = {op: i for i, op in enumerate(function.body.block.ops)}

    def check_and_merge(producer: Group, consumer: Group) -> bool:
        # Checked during the call: the pass erases the original ops once it has cloned them.
        for group in (producer, consumer):
            positions = [order[op] for op in group.ops]
            assert positions == sorted(positions)
        produced = {r for op in producer.ops for r in op.results}
        assert any(operand in produced for op in consumer.ops for operand in op.operands)
        return True

    recorder = Recorder(check_and_merge, [])
    segment_function(function, recorder)
    assert len(recorder.calls) == 5  # a chain of 6 ops: 5 merges, each accepted at first ask


def test_predicate_cannot_override_resharding_or_streams() -> None:
    text = f"""
    func.func @main(%x: {T}) -> ({SHARDED}, {STREAM}) {{
      %e = fusion.exp %x : {T} -> {T}
      %s = fusion.set %e : {T} -> {SHARDED}
      %r = fusion.relu %s : {SHARDED} -> {SHARDED}
      %n = fusion.neg %e : {T} -> {STREAM}
      func.return %r, %n : {SHARDED}, {STREAM}
    }}
    """
    module = hir.parse(text)
    recorder = Recorder(always, [])
    assert segment_module(module, recorder) == []
    assert recorder.calls == []  # illegal pairs never reach the predicate
    assert shape_of_body(module) == ["exp", "set", "relu", "neg", "func.return"]


def test_custom_predicate_cannot_make_a_cycle() -> None:
    # exp -> neg -> tanh and exp -> add <- tanh: exp+add would need the chain between them.
    text = f"""
    func.func @main(%x: {T}) -> {T} {{
      %e = fusion.exp %x : {T} -> {T}
      %n = fusion.neg %e : {T} -> {T}
      %t = fusion.tanh %n : {T} -> {T}
      %a = fusion.add %e, %t : {T}, {T} -> {T}
      func.return %a : {T}
    }}
    """

    def all_but_neg(a: Group, b: Group) -> bool:
        return not any(isinstance(op, fusion.NegOp) for op in a.ops + b.ops)

    module = hir.parse(text)
    segment_module(module, all_but_neg)
    # exp+add is blocked by the path exp -> neg -> tanh -> add, and still after tanh+add merge.
    assert shape_of_body(module) == ["exp", "neg", ["tanh", "add"], "func.return"]
    assert_defined_before_use(main_of(module).body.block)
    assert_same_outputs(hir.parse(text), module, seed=3)


def test_named_policies() -> None:
    default = hir.run_pipeline(hir.parse(CHAIN), "fusion-segment")
    assert shape_of_body(default) == [["exp", "neg"], "add", ["relu", "exp", "tanh"], "func.return"]
    everything = hir.run_pipeline(hir.parse(CHAIN), "fusion-segment{policy=resharding-only}")
    assert shape_of_body(everything) == [["exp", "neg", "add", "relu", "exp", "tanh"], "func.return"]
    contractions = hir.run_pipeline(hir.parse(CHAIN), "fusion-segment{policy=contractions-standalone}")
    assert shape_of_body(contractions) == [["exp", "neg", "add", "relu", "exp", "tanh"], "func.return"]
    # The chain has no GEMM: gemm-epilogues segments it as the default does.
    epilogues = hir.run_pipeline(hir.parse(CHAIN), "fusion-segment{policy=gemm-epilogues}")
    assert shape_of_body(epilogues) == shape_of_body(default)
    # Nor any residual add: contractions-with-epilogues segments it as contractions-standalone does.
    both = hir.run_pipeline(hir.parse(CHAIN), "fusion-segment{policy=contractions-with-epilogues}")
    assert shape_of_body(both) == shape_of_body(contractions)
    assert set(POLICIES) == {
        "standalone-host-ops",
        "resharding-only",
        "contractions-standalone",
        "gemm-epilogues",
        "contractions-with-epilogues",
    }


SHARED_VIEW = """
func.func @main(%g: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %v: tensor<8x8xf32>) -> (tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %r = fusion.reshape %g : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %t = fusion.permute %r perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %a = fusion.matmul %r, %w : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %b = fusion.matmul %t, %v : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %e = fusion.exp %r : tensor<8x8xf32> -> tensor<8x8xf32>
  func.return %a, %b, %e : tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}
"""


@pytest.mark.parametrize("policy", ["standalone-host-ops", "contractions-standalone"])
def test_a_shared_view_is_cloned_for_each_gemm(policy: str) -> None:
    """
    A reshape of an argument read by two GEMMs (one through a transpose) and an exp: each GEMM's
    launch gets its own copy of the view chain, the exp keeps the original; no launch is views
    alone, and the program computes what the unsegmented one does.
    """
    reference = hir.parse(SHARED_VIEW)
    module = hir.run_pipeline(hir.parse(SHARED_VIEW), f"fusion-segment{{policy={policy}}}")
    check_hard_rules(module)
    body = shape_of_body(module)
    assert sorted(map(str, body)) == sorted(
        map(str, [["reshape", "exp"], ["reshape", "matmul"], ["reshape", "permute", "matmul"], "func.return"])
    ), body
    assert_same_outputs(reference, module, seed=3)
    lowered = hir.run_pipeline(hir.parse(SHARED_VIEW), f"stream-lowering{{policy={policy}}}")
    assert_same_outputs(reference, lowered, seed=4)


def test_unknown_policy() -> None:
    """Refused when the pass is built, so that a pipeline with it fails before reading any input."""
    with pytest.raises(
        ValueError, match="unknown policy 'greedy', expected one of: standalone-host-ops, resharding-only"
    ):
        FusionSegmentPass(policy="greedy")
    with pytest.raises(hir.PipelineError, match="invalid options for pass 'fusion-segment': unknown policy 'greedy'"):
        hir.parse_pipeline("fusion-segment{policy=greedy}")


def test_deterministic_across_parses() -> None:
    outputs = set()
    for _ in range(3):
        module = hir.parse(CHAIN)
        segment_module(module, POLICIES["standalone-host-ops"])
        outputs.add(str(module))
    assert len(outputs) == 1


# -- random fusion DAGs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RandomProgram:
    text: str
    predicate_seed: int
    merge_probability: float
    """Per pair of groups, the chance the predicate says yes..."""
    vetoed: frozenset[str]
    """...unless a group holds one of these ops (like the standalone ops of the default policy)."""


@st.composite
def random_programs(draw: st.DrawFn) -> RandomProgram:
    """A DAG of unary/binary fusion ops on 2x8 tensors with random layouts, returning every unused value
    and some others."""
    # A palette per program: with every layout at once, few ops could ever share a kernel.
    layouts = draw(st.sampled_from(PALETTES))
    values: list[tuple[str, str]] = [(f"%arg{i}", draw(st.sampled_from(layouts))) for i in range(2)]
    used: set[str] = set()
    lines = []
    for i in range(draw(st.integers(2, 16))):
        name, result_type = f"%v{i}", draw(st.sampled_from(layouts))
        # The first operand is a recent value (deep chains), the second any value (reconvergence).
        recent = values[-1 - draw(st.integers(0, min(2, len(values) - 1)))]
        if draw(st.booleans()):
            op = draw(st.sampled_from(UNARY))
            operands = [recent]
        else:
            op = draw(st.sampled_from(BINARY))
            operands = [recent, draw(st.sampled_from(values))]
        used.update(v for v, _ in operands)
        lines.append(
            f"  {name} = fusion.{op} {', '.join(v for v, _ in operands)} : "
            f"{', '.join(t for _, t in operands)} -> {result_type}"
        )
        values.append((name, result_type))
    results = [(v, t) for v, t in values[2:] if v not in used or draw(st.booleans())]
    args = ", ".join(f"{v}: {t}" for v, t in values[:2])
    signature = ", ".join(t for _, t in results)
    body = "\n".join(lines)
    text = (
        f"func.func @main({args}) -> ({signature}) {{\n{body}\n"
        f"  func.return {', '.join(v for v, _ in results)} : {signature}\n}}\n"
    )
    return RandomProgram(
        text,
        draw(st.integers(0, 2**16)),
        draw(st.sampled_from([0.0, 0.5, 0.8, 1.0])),
        frozenset(draw(st.sets(st.sampled_from(UNARY + BINARY), max_size=4))),
    )


def random_predicate(program: RandomProgram) -> ShouldMerge:
    """A deterministic coin per pair of groups, keyed by the ops' value names (stable across parses)."""

    def key(group: Group) -> str:
        return ",".join(op.results[0].name_hint or "?" for op in group.ops)

    def should_merge(a: Group, b: Group) -> bool:
        if any(op.name.removeprefix("fusion.") in program.vetoed for op in a.ops + b.ops):
            return False
        coin = random.Random(f"{program.predicate_seed}|{key(a)}|{key(b)}").random()
        return coin < program.merge_probability

    return should_merge


@settings(max_examples=80, deadline=None)
@given(random_programs())
def test_random_dags_stay_acyclic_and_equivalent(program: RandomProgram) -> None:
    reference = hir.parse(program.text)
    module = hir.parse(program.text)
    segment_module(module, random_predicate(program))
    module.verify()
    assert_defined_before_use(main_of(module).body.block)
    check_hard_rules(module)
    assert fusion_op_count(module) == fusion_op_count(reference)
    assert_same_outputs(reference, module, seed=program.predicate_seed)


@settings(max_examples=40, deadline=None)
@given(random_programs())
def test_random_dags_are_deterministic(program: RandomProgram) -> None:
    first, second = hir.parse(program.text), hir.parse(program.text)
    segment_module(first, random_predicate(program))
    segment_module(second, random_predicate(program))
    assert str(first) == str(second)


@settings(max_examples=40, deadline=None)
@given(random_programs(), st.sampled_from(sorted(POLICIES)))
def test_named_policies_are_idempotent(program: RandomProgram, policy: str) -> None:
    once = hir.run_pipeline(hir.parse(program.text), f"fusion-segment{{policy={policy}}}")
    twice = hir.run_pipeline(hir.parse(str(once)), f"fusion-segment{{policy={policy}}}")
    assert str(once) == str(twice)
    assert_same_outputs(hir.parse(program.text), once, seed=program.predicate_seed)
