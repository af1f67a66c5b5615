"""
Starts the ranks of a test job on this machine, as torchrun would, but from one process that
imports torch and hir once and forks the ranks: on 2 cores, importing them costs each rank about
3 s, the larger part of a small job.

    python tests/rank_launcher.py --processes 2 --port 29500 -- SCRIPT [ARGS...]
    python tests/rank_launcher.py --processes 2 --port 29500 -- -m MODULE [ARGS...]
    python tests/rank_launcher.py --serve

Each rank runs SCRIPT (or MODULE) as `__main__` with torchrun's variables (RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT) set. The first rank that fails ends the others, and the
launcher exits with its status; 0 when every rank exits 0.

With `--serve` it runs jobs as tests/ranks.py asks for them, one JSON request a line on stdin, each
job forked from this process (which imported torch and hir once for all of a test worker's jobs):
it answers the job's process id, then its exit status, one JSON line each on stdout.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import runpy
import signal
import sys
import traceback
import warnings

import torch
import torch.distributed

import hir
import hir.runtime.distributed


def warm_up() -> None:
    """
    Compiles and runs a small module once before any fork, so that every rank starts with what a
    first compile imports (torch.export, xDSL, hir's passes and runtime: about 2 s a process on 2
    cores) and fills in once (the decomposition table, torch's override of the composite-implicit
    ops). Tiny tensors, and no `torch.set_num_threads` (tests/ranks.py sets OMP_NUM_THREADS=1):
    torch's intra-op pool made in the parent is invalid in a forked rank, whose own
    `set_num_threads` then aborts ("Invalid thread pool!").
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = hir.compile(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU()), (torch.randn(2, 4),))
        compiled(torch.randn(2, 4))


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


def launch(processes: int, port: int, target: list[str]) -> int:
    sys.stdout.flush()
    pids = [fork_rank(rank, processes, port, target) for rank in range(processes)]
    return wait_for_ranks(pids)


def run_job(request: dict) -> None:
    """In a forked child: the job of `request`, its output in the files it names, in a process group of its own."""
    os.setsid()  # a job that runs past its time is killed with all its ranks
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    code = 1
    try:
        code = launch(request["processes"], request["port"], request["target"])
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> int:
    """Forks each requested job from this process and reports its pid, then its exit status (see the module's doc)."""
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            run_job(request)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), flush=True)
    return 0


def warm_up_and_freeze() -> None:
    """
    `warm_up`, then moves every object made so far out of the collector's reach: the ranks share
    them with this process, and each collection that went through them all wrote to their pages
    (copying them in every rank) and took longer.
    """
    warm_up()
    gc.collect()
    gc.freeze()


def main() -> int:
    if sys.argv[1:] == ["--serve"]:
        warm_up_and_freeze()
        return serve()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("target", nargs=argparse.REMAINDER, help="SCRIPT [ARGS...] or -m MODULE [ARGS...]")
    args = parser.parse_args()
    target = args.target[1:] if args.target[:1] == ["--"] else args.target
    if not target:
        parser.error("no SCRIPT or -m MODULE to run")
    warm_up_and_freeze()
    return launch(args.processes, args.port, target)


if __name__ == "__main__":
    sys.exit(main())
