"""
Starts the ranks of a test job on this machine, as torchrun would, but from one process that
imports torch and hir once and forks the ranks: on 2 cores, importing them costs each rank about
3 s, the larger part of a small job.

    python tests/rank_launcher.py --processes 2 --port 29500 -- SCRIPT [ARGS...]
    python tests/rank_launcher.py --processes 2 --port 29500 -- -m MODULE [ARGS...]

Each rank runs SCRIPT (or MODULE) as `__main__` with torchrun's variables (RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT) set. The first rank that fails ends the others, and the
launcher exits with its status; 0 when every rank exits 0.
"""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import traceback

import torch
import torch.distributed  # noqa: F401

import hir
import hir.runtime.distributed  # noqa: F401


def run_rank(rank: int, processes: int, port: int, target: list[str]) -> int:
    """Runs the target as `__main__` in this (forked) process; its exit status."""
    os.environ.update(
        {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "GROUP_RANK": "0",
            "WORLD_SIZE": str(processes),
            "LOCAL_WORLD_SIZE": str(processes),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
    )
    try:
        if target[0] == "-m":
            sys.argv = [target[1], *target[2:]]
            runpy.run_module(target[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(target)
            sys.path.insert(0, os.path.dirname(os.path.abspath(target[0])))
            runpy.run_path(target[0], run_name="__main__")
        return 0
    except SystemExit as done:
        code = done.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1


def fork_rank(rank: int, processes: int, port: int, target: list[str]) -> int:
    pid = os.fork()
    if pid == 0:
        code = run_rank(rank, processes, port, target)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # not the launcher's exit handlers
    return pid


def wait_for_ranks(pids: list[int]) -> int:
    """0 when every rank exits 0; else the first failure's status, the others killed."""
    running = set(pids)
    try:
        while running:
            pid, status = os.wait()
            running.discard(pid)
            code = os.waitstatus_to_exitcode(status)
            if code != 0:
                return code if code > 0 else 128 - code
        return 0
    finally:
        for pid in running:
            os.kill(pid, signal.SIGKILL)
        for pid in running:
            os.waitpid(pid, 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("target", nargs=argparse.REMAINDER, help="SCRIPT [ARGS...] or -m MODULE [ARGS...]")
    args = parser.parse_args()
    target = args.target[1:] if args.target[:1] == ["--"] else args.target
    if not target:
        parser.error("no SCRIPT or -m MODULE to run")
    sys.stdout.flush()
    pids = [fork_rank(rank, args.processes, args.port, target) for rank in range(args.processes)]
    return wait_for_ranks(pids)


if __name__ == "__main__":
    sys.exit(main())
