"""
The `#fusion.parallel<...>` tensor encoding: how each axis of a tensor is parallelized.

    tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    tensor<?x?xf32, #fusion.parallel<[stream(4), serial]>>
    tensor<4x2x64x1024xbf16, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>

`serial`: an ordinary axis. `stream`: one host-loop iteration per index of the axis.
`stream(N)`: the axis outer-split into N chunks, one iteration per chunk. `didx`: sharded over
the mesh of D devices as torch's `Shard(dim)` (`torch.chunk`): an axis of extent L is cut into
chunks of c = ceil(L/D) indices, the device at mesh position p holds [p*c, min((p+1)*c, L)) (a
trailing device may hold none). L == D is one index per device.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DYNAMIC_INDEX, ArrayAttr, IntAttr, NoneAttr, StringAttr, TensorType
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from hir.dialects.type_cache import cache_by_identity

SERIAL = "serial"
STREAM = "stream"
DIDX = "didx"
AXIS_KINDS = (SERIAL, STREAM, DIDX)
INT64_MAX = 2**63 - 1
"""The largest extent, chunk count or device id: torch's sizes and the hir ops' properties are int64."""


@irdl_attr_definition
class ParallelAttr(ParametrizedAttribute):
    """
    Per-axis parallel types of a tensor, plus the device mesh it lives on: the encoding of a
    builtin `tensor` type.

    Syntax:
        #fusion.parallel<[axis-type, ...]>
        #fusion.parallel<[axis-type, ...], mesh = [device-id, ...]>
        axis-type ::= serial | stream | stream(N) | didx

    Verifies:
        One known parallel type per axis; only a `stream` axis takes a chunk count, N >= 1; at
        most one `stream` and one `didx` axis; mesh ids distinct and non-negative; a `didx` axis
        needs a mesh. On each tensor type the fusion ops check that it lists one parallel type
        per axis of the tensor and that a static `didx` extent is at least 1 (any extent L over D
        devices: device p holds [p*c, min((p+1)*c, L)), c = ceil(L/D)).

    Example:
        %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
        %z = fusion.set %w : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
    """

    name = "fusion.parallel"

    kinds: ArrayAttr[StringAttr]
    """One of `serial`, `stream`, `didx` per axis."""
    chunks: ArrayAttr[IntAttr]
    """Per axis: N for `stream(N)`, 0 otherwise."""
    mesh: ArrayAttr[IntAttr]
    """Device ids; empty means a single device."""

    def __init__(self, kinds: Sequence[str], chunks: Sequence[int] | None = None, mesh: Sequence[int] = ()):
        chunks = [0] * len(kinds) if chunks is None else chunks
        super().__init__(
            ArrayAttr([StringAttr(k) for k in kinds]),
            ArrayAttr([IntAttr(c) for c in chunks]),
            ArrayAttr([IntAttr(d) for d in mesh]),
        )

    # -- queries ---------------------------------------------------------------------------------

    @property
    def axis_kinds(self) -> tuple[str, ...]:
        return tuple(k.data for k in self.kinds.data)

    @property
    def mesh_ids(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.mesh.data)

    @property
    def stream_axis(self) -> int | None:
        return _index_of(self.axis_kinds, STREAM)

    @property
    def stream_chunks(self) -> int | None:
        """N for a `stream(N)` axis, None for a plain `stream` axis or none at all."""
        axis = self.stream_axis
        if axis is None or self.chunks.data[axis].data == 0:
            return None
        return self.chunks.data[axis].data

    @property
    def didx_axis(self) -> int | None:
        return _index_of(self.axis_kinds, DIDX)

    # -- syntax ----------------------------------------------------------------------------------

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        pos = parser.pos
        with parser.in_angle_brackets():
            axes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_axis(parser))
            mesh: list[int] = []
            if parser.parse_optional_punctuation(","):
                parser.parse_keyword("mesh")
                parser.parse_punctuation("=")
                mesh = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
                )
        params = (
            ArrayAttr([StringAttr(kind) for kind, _ in axes]),
            ArrayAttr([IntAttr(n) for _, n in axes]),
            ArrayAttr([IntAttr(d) for d in mesh]),
        )
        try:
            cls.new(params)
        except VerifyException as err:  # report it at the attribute, not as an unlocated error
            parser.raise_error(str(err), pos, parser.pos)
        return params

    def print_parameters(self, printer: Printer) -> None:
        axes = [f"{kind}({n.data})" if n.data else kind for kind, n in zip(self.axis_kinds, self.chunks.data)]
        text = f"<[{', '.join(axes)}]"
        if self.mesh.data:
            text += f", mesh = [{', '.join(str(d) for d in self.mesh_ids)}]"
        printer.print_string(text + ">")

    # -- verification ----------------------------------------------------------------------------

    def verify(self) -> None:
        kinds = self.axis_kinds
        if len(kinds) != len(self.chunks.data):
            raise VerifyException("#fusion.parallel needs one chunk count per axis")
        for kind, n in zip(kinds, self.chunks.data):
            if kind not in AXIS_KINDS:
                raise VerifyException(f"unknown parallel type '{kind}', expected one of {', '.join(AXIS_KINDS)}")
            if n.data < 0 or (n.data and kind != STREAM):
                raise VerifyException(f"only a stream axis takes a chunk count, got {kind}({n.data})")
            if n.data > INT64_MAX:
                raise VerifyException(f"stream({n.data}): the chunk count is out of range (at most 2^63 - 1)")
        for kind in (STREAM, DIDX):
            if kinds.count(kind) > 1:
                raise VerifyException(f"at most one {kind} axis per tensor, found {kinds.count(kind)}")
        mesh = self.mesh_ids
        if len(set(mesh)) != len(mesh) or any(d < 0 for d in mesh):
            raise VerifyException(f"mesh device ids must be distinct and non-negative, got {list(mesh)}")
        if any(d > INT64_MAX for d in mesh):
            raise VerifyException(f"mesh device ids must be at most 2^63 - 1, got {list(mesh)}")
        if DIDX in kinds and not mesh:
            raise VerifyException("a didx axis needs a mesh: add `mesh = [ids]`")


def _index_of(items: tuple[str, ...], item: str) -> int | None:
    return items.index(item) if item in items else None


def _parse_axis(parser: AttrParser) -> tuple[str, int]:
    pos = parser.pos
    kind = parser.parse_identifier()
    if kind not in AXIS_KINDS:
        parser.raise_error(f"unknown parallel type '{kind}', expected one of {', '.join(AXIS_KINDS)}", pos)
    chunks = 0
    if kind == STREAM and parser.parse_optional_punctuation("("):
        chunks = parser.parse_integer(allow_boolean=False, allow_negative=False)
        if chunks <= 0:
            parser.raise_error("stream(N) needs N >= 1", pos)
        parser.parse_punctuation(")")
    return kind, chunks


# -- tensor-type helpers used by every fusion op --------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """The parallelization of one tensor type, with defaults for a plain tensor."""

    kinds: tuple[str, ...]
    stream_chunks: int | None
    mesh: tuple[int, ...]

    @property
    def stream_axis(self) -> int | None:
        return _index_of(self.kinds, STREAM)

    @property
    def didx_axis(self) -> int | None:
        return _index_of(self.kinds, DIDX)


@cache_by_identity(maxsize=8192)  # the passes ask for the same few types again and again
def layout_of(t: Attribute) -> Layout:
    """The parallel layout of a tensor type (all serial, single device when no encoding)."""
    assert isinstance(t, TensorType)
    enc = t.encoding
    if isinstance(enc, ParallelAttr):
        return Layout(enc.axis_kinds, enc.stream_chunks, enc.mesh_ids)
    return Layout((SERIAL,) * len(t.get_shape()), None, ())


def verify_tensor_type(t: TensorType, what: str) -> None:
    """Checks a tensor type's encoding against its shape; `what` names the value in messages."""
    enc = t.encoding
    if isinstance(enc, NoneAttr):
        return
    if not isinstance(enc, ParallelAttr):
        raise VerifyException(f"{what} has an encoding that is not #fusion.parallel: {enc}")
    shape = t.get_shape()
    if len(enc.axis_kinds) != len(shape):
        raise VerifyException(
            f"{what}: #fusion.parallel lists {len(enc.axis_kinds)} axes but the tensor has rank {len(shape)}"
        )
    didx = enc.didx_axis
    if didx is not None and shape[didx] == 0:
        raise VerifyException(
            f"{what}: didx axis {didx} has extent 0: a sharded axis needs at least one index "
            f"(its {len(enc.mesh_ids)} devices hold chunks of ceil(extent/devices) indices)"
        )


def didx_chunk(extent: int, devices: int) -> int:
    """c = ceil(L/D): the indices a device holds of a didx axis of static extent L (fewer on the trailing ones)."""
    return -(-extent // devices)


def is_uneven(t: Attribute) -> bool:
    """Whether `t` has a didx axis whose extent is not the mesh size (dynamic included): not one index per device."""
    if not isinstance(t, TensorType) or not isinstance(t.encoding, ParallelAttr):
        return False
    didx = t.encoding.didx_axis
    return didx is not None and t.get_shape()[didx] != len(t.encoding.mesh_ids)


@dataclass(frozen=True)
class UnevenAxis:
    """The didx axis of a type that is not one index per device: its position, extent and mesh."""

    axis: int
    extent: int
    mesh: tuple[int, ...]


def uneven_axis(t: Attribute) -> UnevenAxis | None:
    """`t`'s didx axis when it is uneven (`is_uneven`), else None."""
    if not is_uneven(t):
        return None
    assert isinstance(t, TensorType)
    layout = layout_of(t)
    assert layout.didx_axis is not None
    return UnevenAxis(layout.didx_axis, t.get_shape()[layout.didx_axis], layout.mesh)


def didx_bounds(extent: int, devices: int, position: int) -> tuple[int, int]:
    """(start, length) of the indices the device at mesh `position` holds of a didx axis of extent L."""
    size = didx_chunk(extent, devices)
    start = min(position * size, extent)
    return start, min(size, extent - start)


def local_shape(t: TensorType) -> list[int]:
    """
    The shape one device holds of a (global) tensor type: a didx axis of extent L over D devices
    has extent L/D when D divides L (1 when L == D), else `?` (the devices hold different extents).
    """
    shape = list(t.get_shape())
    if isinstance(t.encoding, ParallelAttr) and (didx := t.encoding.didx_axis) is not None:
        devices = len(t.encoding.mesh_ids)
        extent = shape[didx]
        shape[didx] = DYNAMIC_INDEX if extent == DYNAMIC_INDEX or extent % devices else extent // devices
    return shape
