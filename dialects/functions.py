"""
The two levels of a function: a *fusion-level* function works on tensors (the program as
written, and the reference the runtime runs eagerly); a *hir* function works on buffers (memrefs,
what stream-lowering makes of it). A lowered function records, as the `fusion.type` attribute of
each argument and result, the fusion-level (global) type that buffer stands for.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation

from hir.diagnostics import LocatedError

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


def inline_calls(module: ModuleOp) -> bool:
    """
    Inlines every `func.call` in the fusion-level functions of `module` (calls in the callee's body
    too), so that a program may be written as several functions. A call of a function that is not
    in the module, of a declaration without a body, or a recursive one is a located error.
    Returns whether any call was inlined.
    """
    functions = {op.sym_name.data: op for op in module.walk() if isinstance(op, func.FuncOp)}
    inlined = False
    for function in functions.values():
        if is_fusion_function(function):
            inlined |= _inline_into(function, functions, (function.sym_name.data,))
    return inlined


def _inline_into(function: func.FuncOp, functions: dict[str, func.FuncOp], chain: tuple[str, ...]) -> bool:
    calls = [op for op in function.walk() if isinstance(op, func.CallOp)]
    for call in calls:
        name = call.callee.root_reference.data
        callee = functions.get(name)
        if callee is None:
            raise LocatedError(call, f"calls @{name}, which is not a function of this module")
        if not callee.body.blocks:
            raise LocatedError(call, f"calls @{name}, a declaration without a body: define it to inline it")
        if name in chain:
            cycle = " -> ".join(f"@{n}" for n in (*chain[chain.index(name) :], name))
            raise LocatedError(call, f"calls @{name} recursively ({cycle}): a call is inlined, so it cannot recurse")
        body = callee.clone()  # inlined bottom-up: the clone's own calls first
        _inline_into(body, functions, (*chain, name))
        block = body.body.block
        mapping = dict(zip(block.args, call.arguments))
        returned = block.last_op
        assert isinstance(returned, func.ReturnOp)
        for op in list(block.ops)[:-1]:
            new = op.clone(value_mapper=mapping)
            for old_result, new_result in zip(op.results, new.results):
                mapping[old_result] = new_result
            call.parent_block().insert_op_before(new, call)  # type: ignore[union-attr]
        for result, value in zip(call.results, returned.arguments):
            result.replace_all_uses_with(mapping.get(value, value))
        call.detach()
        call.erase()
        body.erase()
    return bool(calls)
