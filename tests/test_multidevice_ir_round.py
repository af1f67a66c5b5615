"""
Multi-device programs written as fusion IR that were refused before, on 3 gloo ranks against the
fusion-level reference (tests/multidevice_ir_round_driver.py, one job): didx -> didx reshardings
with an uneven axis (an all-to-all done as the padded all-gather and the local chunk, also on a
sub-mesh, with an empty shard, in f16 and behind a K-sharded matmul sharded on its rows), uneven
shards moving to a mesh of the same size (reordered, between sub-meshes), and sums over the didx
axis onto the same devices in another mesh order (all-reduce, reduce-scatter, per chunk of a
stream loop, to a rotating root, on a sub-mesh) or onto an axis that is not outermost in memory
(an inner axis, a GEMM + reduce-scatter per uneven stream chunk). The lowered IR is pinned by
tests/lit/passes/resharding/uneven_all_to_all.mlir, uneven_move_shards.mlir and
tests/lit/passes/multidevice/sum_onto_reordered_mesh.mlir and reduce_scatter_inner_axis.mlir.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch.distributed as dist
from ranks import run_ranks

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "multidevice_ir_round_driver.py"
MODULES = sorted((HERE / "multidevice_ir_round").glob("*.mlir"))

pytestmark = pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo"
)


@pytest.mark.distributed
def test_modules_match_reference_on_three_ranks() -> None:
    assert len(MODULES) >= 12
    result = run_ranks([str(DRIVER), *map(str, MODULES)], timeout=180, processes=3)
    output = f"{result.stdout}\n{result.stderr}"
    cases = dict(re.findall(r"^CASE (\S+) (.*)$", result.stdout, re.MULTILINE))
    expected = {f"{m.stem}/{p}/streams={n}" for m in MODULES for p in ("nccl", "propagate") for n in (1, 2)}
    assert set(cases) == expected, output
    failed = {name: verdict for name, verdict in cases.items() if verdict != "OK"}
    assert not failed, f"{failed}\n{output}"
    assert result.returncode == 0, output
