"""
Random programs over uneven `didx` axes (tests/fuzz/uneven.py), lowered with the nccl backend
and run on 2 (and, in the long profile, 4) gloo ranks against the unsharded reference, with 1 and
3 streams, race-checked (tests/distributed_driver.py, one job per batch). The ci profile checks
a fixed batch; `HIR_FUZZ_PROFILE=long` (`HIR_FUZZ_SEED=N` repeats a batch) larger ones.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch.distributed as dist
from fuzz.profiles import PROFILE, batch_seed
from fuzz.uneven import FORMS, uneven_program
from test_distributed import run_driver_job

COUNTS = {"ci": {2: 8, 4: 0}, "long": {2: 200, 4: 100}}
JOB_SIZE = 40

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(
        not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo"
    ),
]


def _batch(tmp_path: Path, devices: int, count: int) -> list[Path]:
    rng = random.Random(batch_seed() * 10 + devices)
    paths, forms = [], set()
    for k in range(count):
        form, text = uneven_program(rng, devices)
        forms.add(form)
        path = tmp_path / f"uneven_{devices}_{k}.mlir"
        path.write_text(text)
        paths.append(path)
    if PROFILE == "ci":
        assert forms == set(FORMS), f"the batch lacks {set(FORMS) - forms}"
    return paths


@pytest.mark.parametrize("devices", [2, 4])
def test_uneven_programs_match_reference(tmp_path: Path, devices: int) -> None:
    count = COUNTS[PROFILE][devices]
    if count == 0:
        pytest.skip("4 ranks run in the long profile (HIR_FUZZ_PROFILE=long)")
    paths = _batch(tmp_path, devices, count)
    for start in range(0, len(paths), JOB_SIZE):
        run_driver_job(
            paths[start : start + JOB_SIZE], processes=devices, pipelines=("nccl",), timeout=120 + 6 * JOB_SIZE
        )
