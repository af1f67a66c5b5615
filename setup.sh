#!/usr/bin/env bash
# Installs hir and its tools into the current Python environment (a venv is recommended).
# Chooses PyTorch's CPU build where no NVIDIA GPU is present, so a CI machine does not download CUDA.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if ! python3 -c "import torch" >/dev/null 2>&1; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    python3 -m pip install -q "torch>=2.4"
  else
    # The CPU build this workplace's machines carry on disk; elsewhere any torch >= 2.4 will do.
    python3 -m pip install -q torch==2.13.0 2>/dev/null || python3 -m pip install -q "torch>=2.4"
  fi
fi
python3 -m pip install -q -e ".[dev]"
