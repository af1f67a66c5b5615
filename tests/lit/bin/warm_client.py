#!/usr/bin/env -S python3 -S
"""
Runs a tool in the warm lit tool server (tests/lit/tool_server.py) when one is listening on
$HIR_WARM_SOCKET, else execs the real tool further down PATH. Installed under each tool's name.
Standard library only, and no `site`: it must start in a few milliseconds.
"""

import os
import socket
import sys

tool = os.path.basename(sys.argv[0])


def exec_real_tool() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.abspath(p) != here)
    os.environ["PATH"] = path
    os.execvp(tool, [tool, *sys.argv[1:]])


address = os.environ.get("HIR_WARM_SOCKET")
if not address:
    exec_real_tool()
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    client.connect(address)
except OSError:
    exec_real_tool()
fields = [os.getcwd(), str(len(sys.argv)), *sys.argv, *(f"{k}={v}" for k, v in os.environ.items())]
message = "\0".join(fields).encode() + b"\0\0"
socket.send_fds(client, [message[:65536]], [0, 1, 2])
if len(message) > 65536:
    client.sendall(message[65536:])
status = b""
while len(status) < 4:
    chunk = client.recv(4 - len(status))
    if not chunk:
        sys.stderr.write(f"{tool}: the warm tool server ended without an exit status\n")
        sys.exit(70)
    status += chunk
sys.exit(int.from_bytes(status, "little"))
