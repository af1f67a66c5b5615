"""
Errors of the PyTorch frontend, located at the user's Python line.

torch.export records, for every node of the graph it captures, the Python stack that produced it
(`node.meta["stack_trace"]`). The user's line is the innermost frame that is neither in torch nor
in this frontend: for `self.fc1(x)` that is the line of the call, not `F.linear` inside nn.Linear.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import torch

# A frame's line of code is absent where Python has no source (code typed at a prompt).
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*(?:\n(?!\s*File ")([^\n]*))?')
_LIBRARIES = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep)


class FrontendError(ValueError):
    """A program the frontend cannot import; the message starts with `file:line: error:`."""


@dataclass(frozen=True)
class SourceLine:
    file: str
    line: int
    code: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


def user_source_line(node: torch.fx.Node) -> SourceLine | None:
    """The innermost frame of the node's stack trace outside torch and the frontend, if any."""
    frames = [
        SourceLine(file, int(line), code.strip())
        for file, line, code in _FRAME.findall(node.meta.get("stack_trace") or "")
    ]
    for frame in reversed(frames):
        if not os.path.abspath(frame.file).startswith(_LIBRARIES):
            return frame
    return None


def located_error(node: torch.fx.Node | None, message: str) -> FrontendError:
    """`file:line: error: message` and the line of code, for the user's line that produced `node`."""
    source = user_source_line(node) if node is not None else None
    if source is None:
        where = f"<{node.name}>" if node is not None else "<program>"
        return FrontendError(f"{where}: error: {message}")
    return FrontendError(f"{source}: error: {message}" + (f"\n    {source.code}" if source.code else ""))
