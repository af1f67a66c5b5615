"""
Which tensor and memref types a program may use: the ones the runtime can run.

- element types: `ELEMENT_TYPES`, the one table of the supported element types and the torch
  dtypes they run as (runtime/dtypes.py reads it; the verifiers refuse the others, so a type the
  runtime cannot run never gets past parsing and verification);
- extents, strides and offsets that fit in int64 (torch's sizes), never negative;
- memrefs: the default layout or a `strided<...>` one, in the default memory space;
- tensors: no encoding, or `#fusion.parallel` (whose own checks are in parallel_encoding.py).

`verify_shaped_type` checks one type (the fusion and hir op verifiers call it on their operands
and results); `check_signatures` checks the argument and result types of every function, which
no op verifier sees.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    Signedness,
    StridedLayoutAttr,
    TensorType,
    UnrankedMemRefType,
    UnrankedTensorType,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from hir.diagnostics import LocatedError
from hir.dialects.parallel_encoding import INT64_MAX, ParallelAttr, verify_tensor_type
from hir.dialects.type_cache import cache_by_identity

ELEMENT_TYPES: dict[str, str] = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "ui8": "uint8",
}
"""Element type as the IR spells it -> the name of its torch dtype (`getattr(torch, name)`)."""


def element_type_name(t: Attribute) -> str | None:
    """The IR spelling of a supported element type (`f32`, `i8`, `ui8`), None for any other type."""
    if isinstance(t, IntegerType):
        prefix = {Signedness.SIGNLESS: "i", Signedness.UNSIGNED: "ui"}.get(t.signedness.data)
        if prefix is None:
            return None
        name = f"{prefix}{t.width.data}"
    elif isinstance(t, TensorType | MemRefType):
        return None
    else:
        name = t.name
    return name if name in ELEMENT_TYPES else None


def shaped_type_problem(t: Attribute) -> str | None:
    """What keeps the runtime from running a tensor or memref type, or None (also for other types)."""
    if isinstance(t, UnrankedTensorType | UnrankedMemRefType):
        return "unranked types are not supported (the runtime needs the rank)"
    if not isinstance(t, TensorType | MemRefType):
        return None
    return _ranked_type_problem(t)


# Every op's verifier asks about its operand and result types after every stage of a pipeline;
# a module repeats few types, and types are immutable.
@cache_by_identity(maxsize=8192)
def _ranked_type_problem(t: TensorType | MemRefType) -> str | None:
    if element_type_name(t.element_type) is None:
        return f"element type {t.element_type} is not supported (the runtime runs {', '.join(ELEMENT_TYPES)})"
    for extent in t.get_shape():
        if extent != DYNAMIC_INDEX and not 0 <= extent <= INT64_MAX:
            return f"extent {extent} is out of range (0 to 2^63 - 1)"
    if isinstance(t, TensorType):
        if not isinstance(t.encoding, NoneAttr | ParallelAttr):
            return f"encoding {t.encoding} is not #fusion.parallel"
        return None
    if isinstance(t.memory_space, ParallelAttr):  # what `memref<4xf32, #fusion.parallel<...>>` parses as
        return "a #fusion.parallel encoding belongs to tensor types; a memref has the default or a strided layout"
    if not isinstance(t.memory_space, NoneAttr):
        return f"memory space {t.memory_space} is not supported (buffers live in the device's memory)"
    layout = t.layout
    if isinstance(layout, NoneAttr):
        return None
    if not isinstance(layout, StridedLayoutAttr):
        return f"layout {layout} is not supported: a memref has the default layout or a strided<...> one"
    strides = layout.get_strides()
    offset = layout.get_offset()
    if len(strides) != len(t.get_shape()):
        return f"its strided layout has {len(strides)} strides for rank {len(t.get_shape())}"
    for value in (*strides, offset):
        if value is not None and not -INT64_MAX <= value <= INT64_MAX:
            return f"stride or offset {value} is out of range (int64)"
    if any(stride is not None and stride < 0 for stride in strides):
        return f"negative strides {list(strides)} are not supported (a torch tensor's strides are >= 0)"
    return None


def verify_shaped_type(t: Attribute, what: str) -> None:
    """
    Raises a VerifyException naming `what` when the runtime cannot run a tensor or memref type,
    or a tensor's `#fusion.parallel` encoding does not fit its shape.
    """
    if (problem := shaped_type_problem(t)) is not None:
        raise VerifyException(f"{what} has type {t}: {problem}")
    if isinstance(t, TensorType):
        verify_tensor_type(t, what)


def check_signatures(module: ModuleOp) -> None:
    """Every function's argument and result types are ones the runtime can run (a LocatedError at the function)."""
    for op in module.walk():
        if isinstance(op, func.FuncOp):
            check_signature(op)


def check_signature(function: func.FuncOp) -> None:
    signature = function.function_type
    for kind, types in (("argument", signature.inputs.data), ("result", signature.outputs.data)):
        for k, t in enumerate(types):
            try:
                verify_shaped_type(t, f"{kind} #{k} of @{function.sym_name.data}")
            except VerifyException as err:
                raise LocatedError(function, str(err)) from None
