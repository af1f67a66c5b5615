#!/usr/bin/env bash
# All tests: lint, FileCheck (lit), pytest (CPU; CUDA tests are skipped without a GPU; the
# 2-process gloo tests and the differential fuzzer included).
set -euo pipefail
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ruff check .
ruff format --check .
lit -q tests/lit
python3 -m pytest tests -p no:cacheprovider --durations=15
