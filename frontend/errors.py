"""
Errors of the PyTorch frontend, located at the user's Python line.

torch.export records, for every node of the graph it captures, the Python stack that produced it
(`node.meta["stack_trace"]`). The user's line is the innermost frame that is neither in torch nor
in this frontend: for `self.fc1(x)` that is the line of the call, not `F.linear` inside nn.Linear.
"""

from __future__ import annotations

import copy
import linecache
import os
import re
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx.traceback as fx_traceback
from torch._subclasses.fake_tensor import DynamicOutputShapeException
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
from torch.overrides import TorchFunctionMode

# A frame's line of code is absent where Python has no source (code typed at a prompt).
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*(?:\n(?!\s*File ")([^\n]*))?')
_LIBRARIES = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep)


_HIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NOT_THE_USERS = (
    os.path.dirname(torch.__file__) + os.sep,
    *(os.path.join(_HIR, package) + os.sep for package in ("dialects", "frontend", "passes", "runtime", "tools")),
)


def _users(file: str) -> bool:
    """Whether a frame of `file` is the user's: not torch's, not hir's (its packages and top-level modules)."""
    return not file.startswith(("<", *_NOT_THE_USERS)) and os.path.dirname(file) != _HIR


def user_stacklevel() -> int:
    """
    The `warnings.warn` stacklevel, for the function that calls this one, of the innermost frame
    outside hir and torch: the user's call, however many of hir's frames (a delegated
    specialization, a train/eval switch) or torch's (autograd's backward) lie between.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None:
        if _users(frame.f_code.co_filename):
            return level
        frame, level = frame.f_back, level + 1
    return 1


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
        if _is_users(frame.file):
            return frame
    return None


def _is_users(file: str) -> bool:
    """Whether a frame's file is the user's: neither torch's nor the frontend's."""
    return not os.path.abspath(file).startswith(_LIBRARIES)


def at_line(source: SourceLine, message: str) -> str:
    """`file:line: error: message`, then that line of code where Python has it."""
    return f"{source}: error: {message}" + (f"\n    {source.code}" if source.code else "")


def _at(source: SourceLine, message: str) -> FrontendError:
    return FrontendError(at_line(source, message))


def located_error(node: torch.fx.Node | None, message: str) -> FrontendError:
    """`file:line: error: message` and the line of code, for the user's line that produced `node`."""
    source = user_source_line(node) if node is not None else None
    if source is None:
        where = f"<{node.name}>" if node is not None else "<program>"
        return FrontendError(f"{where}: error: {message}")
    return _at(source, message)


_CAUSED_BY = re.compile(r"Caused by: \(([^\s:()]+):(\d+) in ")
_UNKNOWN_OUTPUT = re.compile(r"Found <class '([^']+)'> in output, which is not a known type")


_DATA_DEPENDENT_ADVICE = {
    "aten.bincount.default": (
        "count with F.one_hot(x, n).sum(0), or torch.histc(x.float(), bins=n, min=0, max=n - 1), whose n counts "
        "are known"
    ),
}


def data_dependent_shape(op: str) -> str:
    """The error of an op whose result's shape depends on its input's values (`torch.bincount`, `F.ctc_loss`)."""
    advice = _DATA_DEPENDENT_ADVICE.get(op)
    return (
        f"{op} returns a result whose shape depends on its input's values (a data-dependent shape), which "
        f"compiled programs do not have{f': {advice}' if advice else ''}"
    )


_DATA_DEPENDENT_NUMBER_ADVICE = {
    "one_hot": "F.one_hot(x) without num_classes takes the count of classes from x's largest value: pass num_classes",
}
"""Advice by the torch function that needed the number (torch's `Caused by: (file:line in function)`)."""


def _data_dependent_number(text: str, code: str) -> str:
    """
    The refusal of a trace that needed a number computed from a tensor's values (torch's `u0`),
    with advice for the function torch names (`Caused by:`, newer torch) or, where it names none
    that has advice, the one called on the user's line `code`.
    """
    named = re.search(r"Caused by: \([^\s:()]+:\d+ in (\w+)\)", text)
    called = [f for f in _DATA_DEPENDENT_NUMBER_ADVICE if re.search(rf"\b{f}\(", code)]
    if named and named.group(1) in _DATA_DEPENDENT_NUMBER_ADVICE:
        advice: str | None = _DATA_DEPENDENT_NUMBER_ADVICE[named.group(1)]
    else:  # torch names none, or one of its own functions (older torch: its decomposition)
        advice = _DATA_DEPENDENT_NUMBER_ADVICE[called[0]] if len(called) == 1 else None
    torchs = text.splitlines()[0].split(" (unhinted")[0].strip()
    return (
        f"the code needs a number computed from a tensor's values (a size, a count or a branch: {torchs}), "
        "which a program traced once for every value cannot have" + (f": {advice}" if advice else "")
    )


GENERATOR_REFUSAL = (
    "a torch.Generator (generator=) is not supported: compiled programs draw from torch's default generator "
    "(seed it with torch.manual_seed)"
)


def unregistered_output(name: str) -> str:
    """The refusal of a returned class that is no pytree node (a dataclass a model returns as its output record)."""
    return (
        f"the code returns a {name}, a class torch.export cannot take apart: register it once, "
        f"`torch.utils._pytree.register_dataclass({name})` for a dataclass (Hugging Face's ModelOutput "
        "classes are registered), or return a tuple or a dict"
    )


# torch names the node by its autograd.Function ("output 0 of _LayerNorm") or, in some versions,
# by its backward's class ("output 0 of _LayerNormBackward").
_SAVED_BY = re.compile(r"output \d+ of (_AttentionWithStatistics|_Attention|_LayerNorm|_RmsNorm)(?:Backward)?\b")
_SAVED_BY_USER = {
    "_AttentionWithStatistics": "F.scaled_dot_product_attention",
    "_Attention": "F.scaled_dot_product_attention",
    "_LayerNorm": "F.layer_norm",
    "_RmsNorm": "F.rms_norm",
}
"""The training step's autograd.Functions (frontend/training_ops.py) by the user's call they stand for."""


def capture_error(err: BaseException, what: str = "torch.export could not capture the program") -> FrontendError:
    """
    A trace's refusal (a data-dependent branch, an unsupported Python construct): `what`, torch's
    first line, at the user's line: the innermost frame of the exception's traceback outside torch
    and the frontend, else the one torch names (`Caused by: (file:line in f)`); `<capture>` where
    neither exists.
    """
    text = str(err).strip()
    first = text.splitlines()[0] if text else type(err).__name__
    # Generated code (`<eval_with_key>`, torch's) is no user's line; torch's `Caused by:` then names it.
    frames = [(frame.f_code.co_filename, line) for frame, line in traceback.walk_tb(err.__traceback__)]
    users = [(file, line) for file, line in frames if _is_users(file) and not file.startswith("<")]
    if users:
        where: tuple[str, int] | None = users[-1]
    elif (named := _CAUSED_BY.search(text)) is not None and os.path.isfile(named.group(1)):  # not torch's own
        where = named.group(1), int(named.group(2))
    else:
        where = None
    code = linecache.getline(*where).strip() if where else ""
    if first == "aten._local_scalar_dense.default":  # torch's DataDependentOutputException names only the op
        first = (
            "the code reads a tensor's value as a Python number (`.item()`, `if t:`, `float(t)`), "
            "which a program traced once for every value cannot"
        )
    elif first.startswith("We found a fake tensor in the exported program constant's list"):
        # torch.export loses track of a tensor updated through `.data` (`self.buf.data.mul_(d)`).
        first = (
            "the code updates a tensor in place through `.data` (or another alias torch.export cannot follow): "
            "update the buffer itself, under `with torch.no_grad():` (`self.buf.mul_(d)`)"
        )
    elif isinstance(err, SyntaxError) and "aten.random_.from" in (err.text or ""):
        # torch's FX code of `aten.random_.from` does not parse (`from` is a keyword).
        first = "x.random_(low, high) cannot be captured by torch.export: use torch.randint(low, high, x.shape)"
    elif (returned := _UNKNOWN_OUTPUT.match(first)) is not None:
        first = unregistered_output(returned.group(1).rsplit(".", 1)[-1])
    elif isinstance(err, DynamicOutputShapeException):  # names only the op, too
        first = data_dependent_shape(first)
    elif isinstance(err, GuardOnDataDependentSymNode):  # "Could not extract specialized integer from ... u0"
        first = _data_dependent_number(text, code)
    elif first.startswith("Please convert all Tensors to FakeTensors first"):  # a real tensor in a trace
        op = re.search(r"Found in (\S+?)\(", first)
        first = (
            f"{op.group(1) + ' reads' if op else 'the code reads'} a tensor that is neither an argument nor the "
            "module's (a global or a closure's read by a function the code calls): pass it as an argument, or "
            "hold it on the module (an attribute, a buffer)"
        )
    elif first.startswith("one of the variables needed for gradient computation has been modified by an inplace"):
        # Autograd's version check in the traced backward: name the user's op, not the frontend's
        # autograd.Function, and drop the hint about a backtrace the user does not see.
        first = _SAVED_BY.sub(lambda m: f"the result of {_SAVED_BY_USER[m.group(1)]}", first.split(" Hint:")[0])
        first = first.rstrip(". ") + (
            ": an in-place update (`y += x`, `y.mul_(2)`) of a tensor the backward reads, which eager's "
            "autograd refuses too at backward(); update a copy instead (`y = y + x`)"
        )
    message = f"{what}: {first}"
    if "torch._C.Generator" in first:  # older torch.export refuses the argument itself (newer ones trace it)
        message = GENERATOR_REFUSAL
    if where is None:
        return FrontendError(f"<capture>: error: {message}")
    # The user's `raise` or `assert`, or an op's error eager raises too (a broadcast of mismatched
    # shapes: a built-in RuntimeError), not one of torch.export's own refusals.
    raised_by_user = bool(frames) and frames[-1] == where
    as_eager = type(err) in (RuntimeError, IndexError, TypeError, ValueError)
    return also_users_exception(_at(SourceLine(*where, code), message), err if raised_by_user or as_eager else None)


def also_users_exception(error: FrontendError, users: BaseException | None) -> FrontendError:
    """
    `error`, made also an instance of the exception class the user's code raised (`raise
    ShapeError(...)`, an `assert`'s AssertionError) where `users` is that exception: eager raises it,
    so `except ShapeError:` catches the compiled function's error too. The exception itself is
    `error.users_exception`. Classes that cannot be combined (a built-in one of another layout) leave
    `error` as it is.
    """
    if users is None or not isinstance(users, Exception) or isinstance(error, type(users)):
        return error
    try:
        combined = _combined_class(type(error), type(users))
        both = combined(str(error))
    except Exception:  # a layout conflict, or an __init__ / __new__ of the user's that takes other arguments
        return error
    both.users_exception = users  # type: ignore[attr-defined]
    return both


_COMBINED: dict[tuple[type, type], type] = {}


def _combined_class(ours: type[FrontendError], users: type[Exception]) -> type[FrontendError]:
    key = (ours, users)
    if key not in _COMBINED:
        _COMBINED[key] = type(
            ours.__name__,
            (ours, users),
            {
                "__module__": ours.__module__,
                "__doc__": ours.__doc__,
                "__str__": BaseException.__str__,
            },  # not KeyError's quotes
        )
    return _COMBINED[key]


class _RecordUserLines(TorchFunctionMode):
    """Sets the traced nodes' stack trace to the user's line of each torch call (see `user_lines`)."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        frame = sys._getframe(1)
        while frame is not None and not _is_users(frame.f_code.co_filename):
            frame = frame.f_back  # type: ignore[assignment]
        if frame is not None:
            file, line = frame.f_code.co_filename, frame.f_lineno
            code = linecache.getline(file, line).strip()
            fx_traceback.set_stack_trace([f'  File "{file}", line {line}, in {frame.f_code.co_name}\n    {code}\n'])
        return func(*args, **(kwargs or {}))


@contextmanager
def user_lines() -> Iterator[None]:
    """
    While AOT autograd traces the user's code (training=True): every node it records carries the
    user's line of the torch call that made it (`node.meta["stack_trace"]`), and so does every node
    of the backward, which AOT autograd's anomaly mode takes from the forward's node; so that an
    error in either graph is located as torch.export's nodes are. AOT autograd records no stack
    of its own.
    """
    with fx_traceback.preserve_node_meta(), _RecordUserLines():
        yield


class NotPickled:
    """
    A compiled function: `copy.deepcopy` copies it (the module with it), and pickling it is an
    error that says what to save instead (it holds lowered programs and the runtime's closures;
    pickling reached one of those, a raw `Can't pickle local object`).
    """

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise FrontendError(
            f"<pickle>: error: {getattr(self, 'name', '<compiled>')}: a compiled function cannot be pickled: save "
            "the module (or its state_dict) and call hir.compile again after loading it"
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        cls = type(self)
        copied = cls.__new__(cls)
        memo[id(self)] = copied
        object.__setattr__(copied, "__dict__", copy.deepcopy(self.__dict__, memo))
        return copied
