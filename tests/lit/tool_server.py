"""
A warm server for the tools lit runs: `hir-opt` and `filecheck` start in ~40 ms instead of ~0.5 s.

Each RUN line of the FileCheck suite starts several processes, and each used to import xDSL,
our dialects and passes (~0.3 s of CPU) before doing ~10 ms of work; with ~500 such processes
that was most of the suite's time. This server imports them once and forks a child per request:
the child takes over the client's stdin, stdout and stderr (passed as file descriptors), working
directory, environment and arguments, runs the tool's real `main`, and reports its exit status.
The client (`bin/warm_client.py`, installed in `bin/` under each tool's name) execs the real
tool instead whenever no server is running, so RUN lines behave the same either way.

Started and stopped by lit.cfg.py; `HIR_LIT_COLD=1 lit tests/lit` runs every tool as a plain process.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable

# Imported before forking, so that each child starts warm.
import filecheck.main
from xdsl.dialects import arith, builtin, func, memref, scf  # noqa: F401

import hir.dialects.fusion
import hir.dialects.hir
import hir.tools.hir_opt
from hir.api import available_passes

TOOLS: dict[str, Callable[[list[str]], object]] = {
    "hir-opt": lambda args: hir.tools.hir_opt.main(args),
    "filecheck": lambda args: filecheck.main.main(),
}


def _preload_passes() -> None:
    for factory in available_passes().values():
        factory()


def serve(path: str, parent: int) -> None:
    _preload_passes()
    gc.freeze()  # the children share these objects: a collection in one would copy their pages
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(128)
    server.settimeout(1.0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    print("ready", flush=True)
    while os.getppid() == parent:  # ends with the lit process that started it
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _run_request(conn)
        conn.close()


def _run_request(conn: socket.socket) -> None:
    """In the forked child: become the client's process, run the tool, send back its exit status."""
    status = 70
    try:
        conn.settimeout(None)
        data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        while not data.endswith(b"\0\0"):
            data += conn.recv(1 << 20)
        fields = data[:-2].decode().split("\0")
        cwd, argc = fields[0], int(fields[1])
        argv, env = fields[2 : 2 + argc], fields[2 + argc :]
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        _reopen_standard_streams()
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(dict(item.split("=", 1) for item in env))
        sys.argv = argv
        status = _exit_status(TOOLS[os.path.basename(argv[0])], argv[1:])
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            status = status or 1
        try:
            conn.sendall(status.to_bytes(4, "little"))
        finally:
            os._exit(0)


def _reopen_standard_streams() -> None:
    """
    Python's sys.stdin/stdout/stderr were made for the server's own descriptors (a file, say, whose
    wrapper believes it can seek); over the client's (pipes, terminals) they need wrappers of their own.
    """
    sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)


def _exit_status(tool: Callable[[list[str]], object], args: list[str]) -> int:
    try:
        result = tool(args)
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
