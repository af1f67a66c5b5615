"""
Multi-process jobs for the tests: `run_ranks` forks the ranks from one process that imported
torch and hir (tests/rank_launcher.py) and gives them the environment torchrun would; `torchrun`
goes through torchrun (for the test of hir-run under torchrun, the documented way to run a
multi-device program). Both return the job's exit status and the ranks' output.

Why not torchrun everywhere: its agent imports torch and runs a rendezvous before any rank starts,
and each rank imports torch, xDSL and hir again: about 3 s a process on 2 cores, most of a small
job, and the suite runs dozens of jobs. The launcher itself is started once per test process
(`--serve`) and forks every job of that process, so that even the launcher's imports are paid once.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hir.runtime.distributed import Session

REPO = Path(__file__).resolve().parent.parent
LAUNCHER = Path(__file__).resolve().parent / "rank_launcher.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment(dist_timeout: int) -> dict[str, str]:
    return {
        **os.environ,
        "HIR_DIST_TIMEOUT": str(dist_timeout),  # a rank stuck in a collective fails the job instead of hanging it
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "1",  # small tensors; the processes share the cores
    }


def torchrun(
    args: list[str], log_dir: Path, *, timeout: float, dist_timeout: int = 30, processes: int = 2
) -> subprocess.CompletedProcess:
    """A torchrun job of `processes` processes on this machine (its own port, so jobs may run side by side)."""
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(processes),
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        "--log-dir",
        str(log_dir),
        *args,
    ]
    return subprocess.run(
        command, cwd=REPO, env=_environment(dist_timeout), capture_output=True, text=True, timeout=timeout
    )


def run_ranks(
    args: list[str], *, timeout: float, dist_timeout: int = 30, processes: int = 2
) -> subprocess.CompletedProcess:
    """
    `python ARGS` as ranks 0 .. processes-1 of one job, with torchrun's variables, forked by
    tests/rank_launcher.py after it imported torch and hir once. Like torchrun, the first rank
    that fails ends the others; the output is every rank's, interleaved as they print. Raises
    subprocess.TimeoutExpired, the job killed, when it runs longer than `timeout` seconds.
    """
    port = free_port()
    command = [sys.executable, str(LAUNCHER), "--processes", str(processes), "--port", str(port), "--", *args]
    env = _environment(dist_timeout)
    with tempfile.TemporaryDirectory(prefix="hir-job-") as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        request = {"processes": processes, "port": port, "target": args, "env": env, "cwd": str(REPO)}
        code = _server().run({**request, "stdout": str(out), "stderr": str(err)}, timeout, command)
        return subprocess.CompletedProcess(
            command, code, out.read_text(errors="replace"), err.read_text(errors="replace")
        )


class _JobServer:
    """tests/rank_launcher.py --serve, started once per test process: forks the jobs `run_ranks` asks for."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(LAUNCHER), "--serve"],
            cwd=REPO,
            env=_environment(30),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        self.pending = b""
        atexit.register(self.close)

    def run(self, request: dict, timeout: float, command: list[str]) -> int:
        """The job's exit status (negative: the signal that ended it)."""
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        pid = self._answer(None)["pid"]  # the job started (the server's own start does not count)
        try:
            return self._answer(time.monotonic() + timeout)["code"]
        except subprocess.TimeoutExpired:
            try:
                os.killpg(pid, signal.SIGKILL)  # the job and its ranks (the job leads its own group)
            except ProcessLookupError:  # not yet its group's leader: it has forked no rank yet
                os.kill(pid, signal.SIGKILL)
            self._answer(None)
            raise subprocess.TimeoutExpired(command, timeout) from None

    def _answer(self, deadline: float | None) -> dict:
        """The server's next JSON line; TimeoutExpired past `deadline`, RuntimeError when the server died."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], wait)[0]:
                raise subprocess.TimeoutExpired("rank_launcher --serve", wait or 0.0)
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"tests/rank_launcher.py --serve exited with status {self.process.wait()}")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


_SERVER: _JobServer | None = None


def _server() -> _JobServer:
    global _SERVER
    if _SERVER is None or not _SERVER.alive():
        _SERVER = _JobServer()
    return _SERVER


def job_verdict(failures: list[str], passed: str) -> int:
    """
    The end of a driver's rank: its failures on stderr, `passed` on rank 0 when no rank failed,
    and the exit status every rank agrees on (non-zero when any rank failed); ends the process group.
    """
    import torch
    import torch.distributed as dist

    for failure in failures:
        print(failure, file=sys.stderr)
    verdict = torch.tensor([len(failures)])
    dist.all_reduce(verdict)
    if dist.get_rank() == 0 and not verdict.item():
        print(passed)
    dist.destroy_process_group()
    return int(verdict.item() > 0)


def run_cases(cases: dict[str, Callable[[int, int], list[str]]], title: str) -> int:
    """
    A driver's rank: a gloo process group, each case (rank, world) -> failures with the same seed
    on every rank (the same module and inputs), then `job_verdict` ("TITLE: N cases match eager
    or raise the same clear error" on rank 0 when none failed).
    """
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    failures = []
    for name, case in cases.items():
        torch.manual_seed(0)
        failures += [f"{name}: {failure}" for failure in case(dist.get_rank(), dist.get_world_size())]
    return job_verdict(failures, f"{title}: {len(cases)} cases match eager or raise the same clear error")


def expect_error(call: Callable[[], object], *parts: str) -> list[str]:
    """A driver's check that `call` raises hir's FrontendError with every one of `parts`: [] or this rank's failure."""
    import torch.distributed as dist

    from hir.frontend import FrontendError

    try:
        call()
    except FrontendError as err:
        missing = [p for p in parts if p not in str(err)]
        return [f"rank {dist.get_rank()}: the error lacks {missing}: {err}"] if missing else []
    return [f"rank {dist.get_rank()}: no error"]


def own(t: Any, position: int, world: int, layout: str | None = "[didx, serial]") -> Any:
    """
    A driver's view of a mesh position's part of a whole tensor: rows of an activation (`"[didx,
    serial]"`), the block of a parameter by its `param_layouts` entry, or all of it (None).
    """
    if layout is None:
        return t
    return t.chunk(world, 1 if layout == "[serial, didx]" else 0)[position]


def sessions_of_the_job(session: Session) -> list[Session]:
    """
    The sessions a driver's rank runs each program in: its own; in a job of one process (a mesh
    of one device) two, without a communicator, as hir-run on one process runs (a collective over
    the one-device mesh is a local copy), and over a gloo process group of one, as a program
    compiled under `torchrun --nproc-per-node 1` runs.
    """
    if session.world_size > 1:
        return [session]
    import torch.distributed as dist

    from hir.runtime.distributed import ProcessGroupCommunicator, Session

    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    grouped = Session(session.device, 0, 1, session.timeout)
    grouped.communicator = ProcessGroupCommunicator(0, 1, session.timeout)
    return [session, grouped]


def close_sessions(sessions: list[Session]) -> None:
    """Closes what `sessions_of_the_job` opened."""
    import torch.distributed as dist

    for session in sessions:
        session.close()
    if sessions[0].world_size == 1 and dist.is_initialized():
        dist.destroy_process_group()
