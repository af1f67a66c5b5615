#!/usr/bin/env bash
# All tests: lint, the FileCheck suite (lit), pytest (CPU; CUDA tests are skipped without a GPU;
# the 2- and 4-process gloo tests and the differential fuzzer included), each with progress.
# pytest ends with the skipped tests grouped by reason (tests/skip_summary.py): which need a CUDA GPU
# or several, which run only in the fuzzers' long profile.
# Uses the environment setup.sh made (.venv) when there is one.
set -euo pipefail
cd "$(dirname "$0")"
if [ -x .venv/bin/python ]; then
  export PATH="$PWD/.venv/bin:$PATH"
fi
# Python caches the bytecode of what it imports (in .venv and the ignored __pycache__ folders) even
# where PYTHONDONTWRITEBYTECODE is set: otherwise each of the run's hundreds of processes compiles
# torch's, xDSL's and hir's modules anew (setup.sh installs without compiling).
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# Every buffer the runtime allocates starts as NaN or a sentinel: a read of memory never written
# fails the numeric tests, the distributed drivers and the fuzzers here as it would on a GPU.
export HIR_POISON=1
# One intra-op thread per process: the pytest workers (one per core) and the ranks they start
# already fill the cores, and torch's OpenMP threads spinning on shared cores made small ops
# tens of times slower.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
jobs=$(python3 -c 'import os; print(max(1, min(len(os.sched_getaffinity(0)), 8)))')
start=$SECONDS
step() { printf '\n== %s (%ss)\n' "$*" "$((SECONDS - start))"; }

step "ruff"
ruff check .
ruff format --check .
step "FileCheck suite: lit tests/lit, $jobs workers"
lit tests/lit -v -j "$jobs"
step "pytest, $jobs workers"
python3 -m pytest tests -p no:cacheprovider -n "$jobs" --dist worksteal --durations=10
step "all tests passed"
