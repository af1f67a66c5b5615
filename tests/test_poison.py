"""
Poisoned allocations (runtime/poison.py): fresh buffers hold NaN or a sentinel, so a read of memory
never written gives a wrong answer on CPU too. The mutation test shows the mode is not vacuous: in
the lowered programs of the test corpus (tests/poison_mutants.py), each `hir.launch` is deleted in
turn and the program, run poisoned on new random inputs, must differ from the reference, unless
the launch's result is never read (listed below with the reason). The test fails when a mutant
outside the lists survives, when a listed one is killed, or when a program as lowered does not
match (a false alarm of the mode).

Last measured (CPU): single device, 157 programs, 206 mutants, 193 killed, 13 equivalent; two
ranks (gloo), 144 programs, 412 mutants, 399 killed, 13 equivalent.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch
from race_mutants import PIPELINES
from ranks import run_ranks

import hir
from hir.runtime import poison
from hir.runtime.compare import mismatches
from hir.runtime.inputs import random_inputs

MUTANTS_SCRIPT = Path(__file__).resolve().parent / "poison_mutants.py"

_UNREAD = "its result is not returned and nothing reads it (dead code the pipeline keeps)"
EQUIVALENT_SINGLE_DEVICE = {
    **{f"tests/lit/fusion/compare_where.mlir:compare/any-backend/hir.launch#{k}": _UNREAD for k in range(5)},
    **{f"tests/lit/fusion/dce_dead_ops.mlir:dead/any-backend/hir.launch#{k}": _UNREAD for k in range(3)},
    "tests/lit/fusion/full.mlir:special/any-backend/hir.launch#0": _UNREAD,
    "tests/lit/fusion/full.mlir:special/any-backend/hir.launch#1": _UNREAD,
    "tests/lit/fusion/full.mlir:special/any-backend/hir.launch#2": "it writes NaN, the poison value itself",
    "tests/lit/fusion/full.mlir:bool/any-backend/hir.launch#0": "it writes True, the poison value of i1",
    "tests/lit/fusion/slice.mlir:empty/any-backend/hir.launch#0": "its result has no element",
}
_PEELED = (
    "inside the peeled first iteration's `scf.if %remote`, which never runs: the first iteration "
    "multiplies each device's own shard"
)
_LOCAL_BRANCH = "the `else` (own shard) branch of a later iteration, which never runs on 2 devices"
EQUIVALENT_MULTIDEVICE = {
    "examples/multidevice/ag_matmul_by_device.mlir:main/copy-engine/hir.launch#0": _PEELED,
    "examples/multidevice/ag_matmul_by_device.mlir:main/copy-engine-start/hir.launch#0": _PEELED,
    "examples/multidevice/ag_matmul_by_device.mlir:main/copy-engine-chunks/hir.launch#0": _PEELED,
    "examples/multidevice/ag_matmul_by_device.mlir:main/copy-engine-chunks/hir.launch#1": _PEELED,
    "examples/multidevice/ag_matmul_by_device.mlir:main/copy-engine-chunks/hir.launch#5": _LOCAL_BRANCH,
    "tests/lit/passes/multidevice/copy_engine_scalar_shard.mlir:main/copy-engine/hir.launch#0": _PEELED,
    "tests/lit/passes/multidevice/copy_engine_scalar_shard.mlir:main/copy-engine-start/hir.launch#0": _PEELED,
    "tests/lit/passes/multidevice/shard_slots_packed.mlir:main/copy-engine/hir.launch#0": _PEELED,
    # The TP MLP pipelined by shard: the peeled iteration's pushes (the shard's, the partial's), and the
    # own partial's copy into the output in a later iteration's `else`.
    "examples/multidevice/tp_mlp.mlir:main/copy-engine-by-shard/hir.launch#0": _PEELED,
    "examples/multidevice/tp_mlp.mlir:main/copy-engine-by-shard/hir.launch#4": _PEELED,
    "examples/multidevice/tp_mlp.mlir:main/copy-engine-by-shard/hir.launch#11": _LOCAL_BRANCH,
    "tests/lit/passes/multidevice/shard_slots_packed.mlir:main/copy-engine-start/hir.launch#0": _PEELED,
    "tests/lit/passes/multidevice/decompose_resharding.mlir:shared_gather/copy-engine/hir.launch#2": _PEELED,
    "tests/lit/passes/multidevice/decompose_resharding.mlir:shared_gather/copy-engine-start/hir.launch#2": _PEELED,
    "tests/lit/passes/multidevice/decompose_resharding.mlir:shared_gather/copy-engine-chunks/hir.launch#2": _PEELED,
    "tests/lit/passes/multidevice/decompose_resharding.mlir:shared_gather/copy-engine-chunks/hir.launch#3": _PEELED,
    "tests/lit/passes/multidevice/decompose_resharding.mlir:shared_gather/copy-engine-chunks/hir.launch#7": (
        _LOCAL_BRANCH
    ),
    "tests/lit/fusion/dce_dead_ops.mlir:dead_set/ring/hir.launch#0": _UNREAD,
    # Sums to a rotating root without a broadcast, on the copy engines: the peeled iteration's push of
    # the partial, and the own partial's copy into the output in a later iteration's `else`.
    **{
        f"{module}/{pipeline}/hir.launch#{k}": reason
        for module in (
            "tests/lit/passes/resharding/rotating_root.mlir#0:matmul_reduce",
            "tests/lit/passes/resharding/rotating_root_backends.mlir:main",
        )
        for pipeline in ("copy-engine", "copy-engine-start")
        for k, reason in ((1, _PEELED), (5, _LOCAL_BRANCH))
    },
}


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        (torch.float32, "nan"),
        (torch.bfloat16, "nan"),
        (torch.int32, -(2**31)),
        (torch.int64, -(2**63)),
        (torch.uint8, 255),
        (torch.bool, True),
    ],
)
def test_poison_values(dtype: torch.dtype, value: object) -> None:
    t = poison.poison(torch.zeros(3, dtype=dtype))
    if value == "nan":
        assert t.isnan().all()
    else:
        assert (t == value).all()


def test_the_environment_switches_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(poison.ENVIRONMENT_VARIABLE, "0")
    assert not poison.enabled()
    monkeypatch.setenv(poison.ENVIRONMENT_VARIABLE, "1")
    assert poison.enabled()


SET_STREAM = Path(__file__).resolve().parent.parent / "examples" / "set_stream.mlir"


@pytest.mark.parametrize("mode", [True, False])
def test_a_deleted_write_shows(mode: bool) -> None:
    """The set_stream example with its launch deleted: its output is never written, NaN when poisoned."""
    lowered = hir.run_pipeline(hir.parse_file(SET_STREAM), "stream-lowering")
    launch = next(op for op in lowered.walk() if op.name == "hir.launch")
    launch.detach()
    program = hir.compile_program(lowered)
    program.poison = mode
    x = torch.randn(4, 8)
    (out,) = program([x])
    if mode:
        assert out.isnan().all()
        assert mismatches([out], [x])
    (written,) = hir.compile_program(hir.run_pipeline(hir.parse_file(SET_STREAM), "stream-lowering"))([x])
    assert torch.equal(written, x)  # as lowered, poisoned or not (HIR_POISON in CI), every element is written


def _survivors(output: str) -> tuple[dict[str, str], dict[str, str]]:
    originals = dict(re.findall(r"^ORIGINAL (\S+) (.*)$", output, re.M))
    mutant_results = dict(re.findall(r"^MUTANT (\S+) (.*)$", output, re.M))
    return originals, mutant_results


def _check(output: str, equivalent: dict[str, str], programs: int, mutant_count: int) -> None:
    originals, results = _survivors(output)
    assert len(originals) >= programs, f"the corpus shrank: {len(originals)} programs"
    assert len(results) >= mutant_count, f"the corpus shrank: {len(results)} mutants"
    wrong = {name: v for name, v in originals.items() if v != "match"}
    assert not wrong, f"programs as lowered differ from the reference when poisoned: {wrong}"
    errors = {name: v for name, v in results.items() if v.startswith("error")}
    survived = {name for name, v in results.items() if v == "match"}
    assert survived == set(equivalent), (
        f"surviving mutants not listed: {sorted(survived - set(equivalent))}; "
        f"listed but killed: {sorted(set(equivalent) - survived)}; errors: {errors}"
    )


def test_single_device_mutants(capsys: pytest.CaptureFixture[str]) -> None:
    from poison_mutants import main

    main([])
    _check(capsys.readouterr().out, EQUIVALENT_SINGLE_DEVICE, programs=150, mutant_count=200)


# The lowerings of the two-rank corpus: in the default run each backend once (nccl, the copy engines
# with their automatic chunks and release barrier, the copy-engine pipeline by shard, the ring);
# `chunks=2`, `release=start` and `release=end`, options of the same copy-engine pipelines, in the
# long profile (HIR_FUZZ_PROFILE=long), which checks the whole corpus (the table of docs/testing.md).
LONG = os.environ.get("HIR_FUZZ_PROFILE") == "long"
MULTIDEVICE_BACKENDS = tuple(PIPELINES) if LONG else ("nccl", "copy-engine", "copy-engine-by-shard", "ring")


@pytest.mark.distributed
def test_two_rank_mutants() -> None:
    pipelines = ",".join(MULTIDEVICE_BACKENDS)
    result = run_ranks([str(MUTANTS_SCRIPT), "--multidevice", "--pipelines", pipelines], timeout=300)
    output = f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output[-3000:]
    equivalent = {k: v for k, v in EQUIVALENT_MULTIDEVICE.items() if k.rsplit("/", 2)[1] in MULTIDEVICE_BACKENDS}
    programs, mutant_count = (130, 390) if LONG else (160, 430)
    _check(result.stdout, equivalent, programs=programs, mutant_count=mutant_count)


def test_random_inputs_are_not_zeros() -> None:
    """The mutants run on random data (a mutant that leaves zeros where zeros are expected would survive)."""
    (x,) = random_inputs([hir.parse_file(SET_STREAM).body.block.first_op.function_type.inputs.data[0]], seed=1)  # type: ignore[union-attr]
    assert (x != 0).all()
