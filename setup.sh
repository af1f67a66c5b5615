#!/usr/bin/env bash
# Installs hir, its tools, its test dependencies and matplotlib (the `plot` extra: the timeline PNG of
# `hir-run --profile`).
#
# Where: the active virtual environment when there is one, otherwise a project-local `.venv`
# (created here, so a system Python that refuses `pip install` as "externally managed" works too).
# Either way `.venv` afterwards names the environment: `. .venv/bin/activate` puts hir-opt and
# hir-run on PATH, and run_tests.sh uses it.
#
# PyTorch: kept when the environment already has one (any >= 2.4). Otherwise the CUDA build where
# an NVIDIA GPU is present, and a CPU build where none is (a local wheel when pip has one, else
# PyTorch's CPU index), so that a machine without a GPU does not download several GB of CUDA.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '[setup] %s\n' "$*"; }

if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
  if [ "$(cd "$VIRTUAL_ENV" && pwd -P)" != "$(cd .venv 2>/dev/null && pwd -P)" ]; then
    rm -rf .venv
    ln -s "$VIRTUAL_ENV" .venv
  fi
  step "using the active virtual environment $VIRTUAL_ENV"
elif [ ! -x .venv/bin/python ]; then
  step "creating .venv with $(command -v python3)"
  if ! python3 -m venv .venv 2>/dev/null; then
    # Debian/Ubuntu without python3-venv: a venv without pip, which the system pip then bootstraps.
    rm -rf .venv
    python3 -m venv --without-pip .venv && python3 -m pip --python .venv/bin/python install -q pip || {
      echo "setup.sh: cannot create a virtual environment; install venv support (Debian/Ubuntu: apt install python3-venv)" >&2
      exit 1
    }
  fi
fi
python=.venv/bin/python
torch_deps=()
"$python" -c 'import sys; assert sys.version_info >= (3, 11), "hir needs Python >= 3.11"' || {
  echo "setup.sh: hir needs Python >= 3.11, $python is $("$python" --version 2>&1)" >&2
  exit 1
}
# pip would compile every module it installs (30 s of CPU, one file at a time); instead Python
# compiles the ones a program imports on first use and caches them (run_tests.sh lets it write the
# cache even where PYTHONDONTWRITEBYTECODE is set).
pip() { "$python" -m pip --disable-pip-version-check "$@"; }
install() { pip install --no-compile "$@"; }

if ! "$python" -c "import torch" >/dev/null 2>&1; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    step "installing PyTorch (CUDA build)"
    install -q "torch>=2.4"
  else
    step "installing PyTorch (CPU build)"
    # A CPU wheel that pip finds locally (its find-links) first, then PyTorch's CPU index, then PyPI.
    if install -q --no-index --no-deps "torch>=2.4" 2>/dev/null; then
      torch_deps=("torch==$(pip show torch | sed -n 's/^Version: //p')")  # its dependencies, installed below
    else
      install -q --timeout 30 --retries 1 --index-url https://download.pytorch.org/whl/cpu "torch>=2.4" ||
        install -q "torch>=2.4"
    fi
  fi
fi
step "installing hir with its tools, test dependencies and matplotlib (hir-run --profile's timeline PNG)"
install -q -e ".[dev,plot]" ${torch_deps[@]+"${torch_deps[@]}"}
# Its imports write their bytecode cache (see above), the first that the test run would compile.
step "done: $(env -u PYTHONDONTWRITEBYTECODE "$python" -c 'import matplotlib, torch, xdsl; print(f"torch {torch.__version__}, xdsl {xdsl.__version__}, matplotlib {matplotlib.__version__}")')"
