"""
The two levels of a function: a *fusion-level* function works on tensors (the program as
written, and the reference the runtime runs eagerly); a *hir* function works on buffers (memrefs,
what stream-lowering makes of it). A lowered function records, as the `fusion.type` attribute of
each argument and result, the fusion-level (global) type that buffer stands for.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, MemRefType, TensorType
from xdsl.ir import Attribute, Operation

FUSION_TYPE_ATTR = "fusion.type"


def is_hir_function(function: func.FuncOp) -> bool:
    """A function on buffers: some argument or result is a memref."""
    types = [*function.function_type.inputs.data, *function.function_type.outputs.data]
    return any(isinstance(t, MemRefType) for t in types)


def is_fusion_function(op: Operation) -> bool:
    """A function with a body on tensors and no buffers: what convert-fusion-to-hir converts."""
    if not isinstance(op, func.FuncOp) or not op.body.blocks or is_hir_function(op):
        return False
    types = [*op.function_type.inputs.data, *op.function_type.outputs.data]
    return any(isinstance(t, TensorType) for t in types)


def fusion_type_attrs(types: list[Attribute]) -> ArrayAttr[DictionaryAttr]:
    """Argument or result attributes recording the fusion-level `types`."""
    return ArrayAttr([DictionaryAttr({FUSION_TYPE_ATTR: t}) for t in types])


def fusion_types(function: func.FuncOp, results: bool = False) -> list[Attribute]:
    """The fusion-level types of the arguments (or results): recorded ones, else the declared types."""
    signature = function.function_type
    types = list(signature.outputs.data if results else signature.inputs.data)
    attrs = function.res_attrs if results else function.arg_attrs
    for i, entry in enumerate(attrs.data if attrs is not None else ()):
        if (recorded := entry.data.get(FUSION_TYPE_ATTR)) is not None:
            types[i] = recorded
    return types
