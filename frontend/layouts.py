"""
Layouts of the logical (PyTorch) tensors a user hands to `hir.import_torch` / `hir.compile`, and
their fusion types.

A layout is the axis list of `#fusion.parallel`, one entry per logical axis, as a string:

    "[stream, serial]"         axis 0 iterated by a host stream loop (one iteration per index)
    "[stream(4), serial]"      axis 0 cut into 4 stream chunks
    "[didx, serial]"           (with a mesh) axis 0 sharded over the mesh, contiguous blocks
    "[(stream(2), didx), serial]"
                               (with a mesh) axis 0 cut into 2 chunks, each sharded over the mesh

Without a mesh the fusion type is the logical type with this encoding. With a mesh, the sharded
programs of `frontend/sharded.py` give tensors a split form; see there.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from hir.dialects.parallel_encoding import DIDX, SERIAL, STREAM, ParallelAttr
from hir.frontend.errors import FrontendError


class LayoutError(ValueError):
    """A layout string that does not parse or does not fit its tensor."""


@dataclass(frozen=True)
class AxisLayout:
    """One logical axis: serial, stream (chunks 0: one iteration per index), didx, or chunks x didx."""

    kind: str
    chunks: int = 0
    """stream(N): N; for `(stream(N), didx)`, the N chunks that are each sharded over the mesh."""

    @property
    def is_sharded(self) -> bool:
        return self.kind == DIDX


_AXIS = re.compile(
    r"\s*(?:\(\s*stream\s*\(\s*(\d+)\s*\)\s*,\s*didx\s*\)|(stream|serial|didx)(?:\s*\(\s*(\d+)\s*\))?)\s*"
)


def check_param_layouts(param_layouts: Any) -> None:
    """A FrontendError unless `param_layouts` is None or a mapping of parameter names to layouts."""
    if param_layouts is not None and not isinstance(param_layouts, Mapping):
        raise FrontendError(
            "<layouts>: error: param_layouts maps the module's parameter names to layouts, such as "
            f'{{"fc1.weight": "[didx, serial]"}}, got a {type(param_layouts).__name__}: {param_layouts!r}'
        )


def check_mesh(mesh: Any, name: str = "") -> tuple[int, ...] | None:
    """
    None, or `mesh` as a tuple of device ids: distinct ranks of the job. A FrontendError on every
    rank alike where it is not (at compile time: a mesh that names a rank the job lacks would
    leave its ranks waiting for that rank at the first call).
    """
    if mesh is None:
        return None
    who = f"{name}: " if name else ""
    example = "a list of the ranks that hold the shards, such as [0, 1]"
    if isinstance(mesh, (str, bytes)) or not isinstance(mesh, Sequence):
        raise FrontendError(f"<compile>: error: {who}mesh is {example}, got {mesh!r}")
    ids = list(mesh)
    if not ids:
        raise FrontendError(f"<compile>: error: {who}mesh is {example}, got an empty list")
    bad = [d for d in ids if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 0]
    if bad:
        raise FrontendError(
            f"<compile>: error: {who}mesh {ids!r} lists {bad[0]!r}: device ids are the ranks of the job, "
            "integers from 0"
        )
    ids = [int(d) for d in ids]
    if len(set(ids)) != len(ids):
        raise FrontendError(f"<compile>: error: {who}mesh {ids} must list distinct device ids")
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and max(ids) >= dist.get_world_size():
        world = dist.get_world_size()
        raise FrontendError(
            f"<compile>: error: {who}mesh {ids} names rank {max(ids)}, but the job has {world} process"
            f"{'es' * (world > 1)} (ranks 0 to {world - 1}): a mesh lists ranks of the job"
        )
    return tuple(ids)


def parse_layout(text: str, rank: int, what: str) -> tuple[AxisLayout, ...]:
    """`"[stream(4), serial]"` -> one AxisLayout per axis; `what` names the tensor in errors."""
    if not isinstance(text, str):
        raise LayoutError(f'{what}: a layout is a string such as "[didx, serial]" (or None), got {text!r}')
    body = text.strip()
    if not (body.startswith("[") and body.endswith("]")):
        raise LayoutError(f'{what}: layout {text!r} must be a bracketed axis list such as "[stream, serial]"')
    entries: list[AxisLayout] = []
    rest = body[1:-1]
    while rest.strip():
        match = _AXIS.match(rest)
        if not match:
            raise LayoutError(
                f"{what}: cannot read the layout {text!r} at {rest.strip()!r}: expected serial, stream, "
                "stream(N), didx or (stream(N), didx)"
            )
        sharded_chunks, kind, chunks = match.groups()
        if sharded_chunks is not None:
            entries.append(AxisLayout(DIDX, int(sharded_chunks)))
        else:
            if chunks is not None and kind != STREAM:
                raise LayoutError(f"{what}: only a stream axis takes a chunk count, got {kind}({chunks}) in {text!r}")
            entries.append(AxisLayout(kind, int(chunks or 0)))
        rest = rest[match.end() :]
        if rest.startswith(","):
            rest = rest[1:]
        elif rest.strip():
            raise LayoutError(f"{what}: expected ',' in the layout {text!r} before {rest.strip()!r}")
    if len(entries) != rank:
        raise LayoutError(f"{what}: layout {text!r} has {len(entries)} axes, the tensor has {rank}")
    for kind in (STREAM, DIDX):
        if sum(e.kind == kind for e in entries) > 1:
            raise LayoutError(f"{what}: layout {text!r} has more than one {kind} axis")
    return tuple(entries)


def serial_layout(rank: int) -> tuple[AxisLayout, ...]:
    return (AxisLayout(SERIAL),) * rank


def layout_text(layout: tuple[AxisLayout, ...]) -> str:
    def entry(a: AxisLayout) -> str:
        if a.kind == DIDX and a.chunks:
            return f"(stream({a.chunks}), didx)"
        return f"{a.kind}({a.chunks})" if a.chunks else a.kind

    return "[" + ", ".join(entry(a) for a in layout) + "]"


def single_device_type(
    shape: tuple[int, ...], element: Attribute, layout: tuple[AxisLayout, ...], what: str
) -> TensorType:
    """The fusion type of a logical tensor on one device: its shape, with the layout as encoding."""
    if any(a.is_sharded for a in layout):
        raise LayoutError(f"{what}: a didx axis needs a mesh: pass mesh=[0, 1, ...]")
    for axis, (a, extent) in enumerate(zip(layout, shape)):
        if a.chunks and extent % a.chunks:
            raise LayoutError(f"{what}: stream({a.chunks}) does not divide axis {axis} of extent {extent}")
    if all(a.kind == SERIAL for a in layout):
        return TensorType(element, shape)
    return TensorType(element, shape, ParallelAttr([a.kind for a in layout], [a.chunks for a in layout]))


def tied_param_layouts(fn: Any, read: Sequence[str], param_layouts: dict[str, str | None]) -> dict[str, str | None]:
    """
    `param_layouts` with each entry given under another name of a tensor the module holds under
    several (tied weights: `fc3.weight = fc1.weight`) given to every name the captured program
    reads it by (`read`: torch.export's inputs name each tensor once or more, not necessarily by
    the name the user gave a layout); two names of one tensor with different layouts are an error.
    """
    named = getattr(fn, "named_parameters", None)
    if named is None or not param_layouts:
        return param_layouts
    groups: dict[int, list[str]] = {}
    for name, tensor in [*named(remove_duplicate=False), *fn.named_buffers(remove_duplicate=False)]:
        groups.setdefault(id(tensor), []).append(name)
    read_names = set(read)
    layouts = dict(param_layouts)
    for names in groups.values():
        given = [n for n in names if n in layouts]
        targets = [n for n in names if n in read_names]
        if len(names) < 2 or not given or not targets:
            continue
        values = {layouts[n] for n in given}
        if len(values) > 1:
            spelled = ", ".join(f"{n!r}: {layouts[n]!r}" for n in given)
            raise FrontendError(
                f"<layouts>: error: param_layouts gives one tensor different layouts under its names "
                f"({spelled}): the module holds it under {names} (tied weights); give it one layout"
            )
        layout = values.pop()
        for n in given:
            del layouts[n]
        layouts.update(dict.fromkeys(targets, layout))
    return layouts
