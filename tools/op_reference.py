"""
What docs/ops.md says about each op, attribute and type, read from where it is defined: the IRDL
definition (operands, results, properties, regions, traits, the declarative assembly format) and
the class docstring, whose sections carry what IRDL cannot say:

    Summary and description.

    Syntax:
        the documented form, for ops that parse themselves (no declarative format)

    Verifies:
        what `verify_` (or a hook it calls: `result_shape`, `verify_shapes`, ...) enforces

    Example:
        MLIR that parses and verifies; values it uses without defining become arguments

A class that defines a verifier hook must say in its own docstring what it verifies; the checks
of an op are the "Verifies:" sections of its class and of its bases. Every example is parsed and
verified here, must contain the op it documents, and must be written as hir-opt prints it.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import io
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import ArrayOfConstraint, DenseArrayBase, IntegerAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AnyAttr,
    BaseAttr,
    EqAttrConstraint,
    IRDLOperation,
    OptOperandDef,
    OptPropertyDef,
    ParamAttrConstraint,
    RangeLengthConstraint,
    RangeOf,
    SingleBlockRegionDef,
    VarConstraint,
    VarOperandDef,
    VarResultDef,
)
from xdsl.printer import Printer
from xdsl.traits import DefaultResource, MemoryEffect, NoMemoryEffect, RecursiveMemoryEffect

from hir.api import make_context, parse
from hir.diagnostics import LocatedParser

SECTIONS = ("Syntax", "Verifies", "Example")
VERIFIER_HOOKS = ("verify_", "verify", "result_shape", "verify_element_types", "verify_shapes")
"""Methods whose checks a class's "Verifies:" section must describe (`verify` for attributes)."""

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class ReferenceError(Exception):
    """A definition the reference cannot document: names the file and line of the class."""


def where(cls: type, section: str | None = None) -> str:
    """`dialects/hir/loops.py:120 (ForOp)`, or the line of a docstring section: `...:131 (ForOp, Example:)`"""
    path = Path(inspect.getsourcefile(cls) or "?").resolve()
    shown = path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path
    source, line = inspect.getsourcelines(cls)
    if section is None:
        return f"{shown}:{line} ({cls.__name__})"
    offset = next((k for k, text in enumerate(source) if text.strip() == f"{section}:"), 0)
    return f"{shown}:{line + offset} ({cls.__name__}, {section}:)"


# -- docstrings ------------------------------------------------------------------------------------


@dataclass
class Docstring:
    description: str
    """The text before the first section: a summary paragraph, then more."""
    sections: dict[str, str]

    @property
    def summary(self) -> str:
        return self.description.split("\n\n")[0].replace("\n", " ")

    @property
    def details(self) -> str:
        return self.description.partition("\n\n")[2]


def docstring_of(cls: type) -> Docstring:
    """The class's own docstring (not inherited), split into its description and sections."""
    text = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    description: list[str] = []
    sections: dict[str, list[str]] = {}
    current = description
    for line in text.splitlines():
        header = line.rstrip()[:-1] if line.rstrip().endswith(":") else None
        if header in SECTIONS:
            if header in sections:
                raise ReferenceError(f"{where(cls)}: two '{header}:' sections in the docstring")
            current = sections[header] = []
        elif current is not description and line and not line.startswith(" "):
            raise ReferenceError(f"{where(cls)}: the docstring goes on after an indented section: {line!r}")
        else:
            current.append(line)
    return Docstring(
        "\n".join(description).strip(),
        {name: textwrap.dedent("\n".join(lines)).strip() for name, lines in sections.items()},
    )


def own_classes(cls: type) -> list[type]:
    """`cls` and its bases, most general first, but those of xDSL and Python."""
    return [c for c in reversed(cls.__mro__) if c.__module__.split(".")[0] not in ("xdsl", "abc", "builtins")]


def verifies_of(cls: type) -> list[str]:
    """The "Verifies:" sections of the class and its bases; fails where a hook is undocumented."""
    checks = []
    for c in own_classes(cls):
        doc = docstring_of(c)
        hooks = defined_hooks(c)
        if hooks and "Verifies" not in doc.sections:
            raise ReferenceError(
                f"{where(c)}: defines {', '.join(hooks)}; say what it checks in a 'Verifies:' section of its docstring"
            )
        if "Verifies" in doc.sections:
            checks.append(doc.sections["Verifies"])
    return checks


def defined_hooks(cls: type) -> list[str]:
    """
    The verifier hooks the class body defines. Read from the source: `irdl_op_definition` replaces
    every op's `verify_` with a wrapper, so the class dict cannot tell whose it is.
    """
    methods = methods_by_class(inspect.getsourcefile(cls) or "")[cls.__name__]
    return [hook for hook in VERIFIER_HOOKS if hook in methods]


@functools.cache
def methods_by_class(path: str) -> dict[str, set[str]]:
    """The names of the methods each class of a module defines (one parse per file)."""
    tree = ast.parse(Path(path).read_text())
    return {
        node.name: {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }


# -- constraints, traits and effects in words -----------------------------------------------------


BUILTIN_ATTRIBUTES: dict[type[Attribute], str] = {
    DenseArrayBase: "dense array of integers",
    UnitAttr: "unit (present or absent)",
    StringAttr: "string",
}


def describe_constraint(constr: object) -> str:
    """An IRDL constraint in words: `memref`, `!hir.stream`, `i64 integer`, ..."""
    if isinstance(constr, RangeOf):
        return describe_constraint(constr.constr)
    if isinstance(constr, RangeLengthConstraint):
        return describe_constraint(constr.constraint)
    if isinstance(constr, VarConstraint):
        return f"{describe_constraint(constr.constraint)} (all `{constr.name}` have one type)"
    if isinstance(constr, AnyAttr):
        return "any"
    if isinstance(constr, EqAttrConstraint):
        return f"`{constr.attr}`"
    if isinstance(constr, ParamAttrConstraint) and constr.base_attr is IntegerAttr:
        return f"{describe_constraint(constr.param_constrs[1]).strip('`')} integer"
    if isinstance(constr, BaseAttr):
        return attribute_name(constr.attr)
    if isinstance(constr, ArrayOfConstraint):
        return f"array of {describe_constraint(constr.elem_range_constraint)}"
    return f"`{constr}`"


def attribute_name(attr: type[Attribute]) -> str:
    """How MLIR spells a type or attribute kind: `tensor`, `!hir.stream`, `#fusion.parallel`."""
    if attr in BUILTIN_ATTRIBUTES:
        return BUILTIN_ATTRIBUTES[attr]
    name = getattr(attr, "name", attr.__name__)
    if "." not in name or name.startswith("builtin."):
        return f"`{name.removeprefix('builtin.')}`"
    return f"`{'!' if issubclass(attr, TypeAttribute) else '#'}{name}`"


def describe_trait(trait: object) -> str:
    """`Pure`, `HasParent<fusion.segment>`, `SingleBlockImplicitTerminator<hir.yield>`."""
    params: list[str] = []
    for field in dataclasses.fields(trait) if dataclasses.is_dataclass(trait) else ():
        value = getattr(trait, field.name)
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, type) and issubclass(item, Operation):
                params.append(item.name)  # type: ignore[attr-defined]
    name = type(trait).__name__
    return f"`{name}<{', '.join(params)}>`" if params else f"`{name}`"


def describe_effects(op: Operation) -> str:
    """The memory effects an op declares, with operands by name: `read ins`, `write hir.device_queue`."""
    if op.has_trait(NoMemoryEffect):
        return "none"
    names = value_names(op)
    parts: list[str] = []
    recursive = False
    for trait in op.get_traits_of_type(MemoryEffect):
        if isinstance(trait, RecursiveMemoryEffect):
            recursive = True
            continue
        for effect in trait.get_effects(op) or ():
            if isinstance(effect.value, SSAValue):
                target = names[effect.value]
            elif effect.value is None and not isinstance(effect.resource, DefaultResource | None):
                target = f"`{effect.resource.name()}`"
            else:
                target = "any memory"
            parts.append(f"{effect.kind.name.lower()} {target}")
    parts = sorted(set(parts), key=lambda part: (part.startswith("write"), "any memory" in part, part))
    if recursive:
        parts.append("those of the ops in its region")
    return ", ".join(parts) if parts else "unknown: no effect trait (passes assume it may do anything)"


def value_names(op: Operation) -> dict[SSAValue, str]:
    """Each operand and result of an op by the name of its IRDL definition: `ins`, `result`."""
    assert isinstance(op, IRDLOperation)
    definition = type(op).get_irdl_definition()
    names: dict[SSAValue, str] = {}
    for name, _ in [*definition.operands, *definition.results]:
        values = getattr(op, name)
        for value in values if isinstance(values, Sequence) else (values,):
            if isinstance(value, SSAValue):
                if names.setdefault(value, f"`{name}`") != f"`{name}`":
                    raise ReferenceError(
                        f"{where(type(op), 'Example')}: the example passes one value as {names[value]} and `{name}`: "
                        "use distinct values, so that its effects name the operand"
                    )
    return names


# -- examples -------------------------------------------------------------------------------------


def parse_example(text: str, name: str) -> ModuleOp:
    """
    Parses and verifies an example. A `func.func` or `builtin.module` parses as it is; other text
    becomes the body of a function whose arguments are the values it uses without defining them,
    with the types the ops give them.
    """
    if text.startswith(("func.func", "builtin.module")):
        return parse(text, name)
    parser = LocatedParser(make_context(), text, name)
    while parser.parse_optional_operation() is not None:
        pass
    if not parser.lexer.input.content[parser.pos :].strip() == "":
        parser.raise_error("expected an operation")
    free = {value: refs[0].type for value, refs in parser.forward_ssa_references.items()}
    arguments = ", ".join(f"%{value}: {t}" for value, t in free.items())
    body = textwrap.indent(text, "  ")
    return parse(f"func.func @example({arguments}) {{\n{body}\n  func.return\n}}\n", name)


def printed(op: Operation) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue()


def checked_example(cls: type, text: str) -> ModuleOp:
    """The example, parsed and verified, with the op (or attribute) it documents, in printed form."""
    try:
        module = parse_example(text, f"example of {getattr(cls, 'name', cls.__name__)}")
    except Exception as err:  # a ParseError, or a LocatedError from the verifier
        raise ReferenceError(f"{where(cls, 'Example')}: the example does not parse and verify:\n{err}") from None
    if issubclass(cls, Operation):
        instances = [op for op in module.walk() if isinstance(op, cls)]
        if not instances:
            raise ReferenceError(f"{where(cls, 'Example')}: the example has no {cls.name} op")  # type: ignore[attr-defined]
        lines = {line.strip() for line in text.splitlines()}
        for op in instances:
            first_line = printed(op).strip().splitlines()[0].strip()
            if first_line not in lines:
                raise ReferenceError(
                    f"{where(cls, 'Example')}: write the example as hir-opt prints it:\n  {first_line}"
                )
    elif attribute_name(cls).strip("`").split("<")[0] not in printed(module):
        raise ReferenceError(f"{where(cls, 'Example')}: the example does not use {attribute_name(cls)}")
    return module


# -- the entries of the reference ------------------------------------------------------------------


@dataclass
class Field:
    name: str
    constraint: str
    arity: str = ""
    """"optional", "variadic" or ""."""


@dataclass
class OpEntry:
    name: str
    cls: type[IRDLOperation]
    doc: Docstring
    syntax: str
    declarative: bool
    verifies: list[str]
    example: str
    operands: list[Field]
    results: list[Field]
    properties: list[Field]
    regions: list[Field]
    traits: list[str]
    effects: str


def op_entry(cls: type[IRDLOperation]) -> OpEntry:
    definition = cls.get_irdl_definition()
    doc = docstring_of(cls)
    declarative = definition.assembly_format is not None
    if declarative and "Syntax" in doc.sections:
        raise ReferenceError(f"{where(cls)}: the declarative format is the syntax: drop the 'Syntax:' section")
    if not declarative and "Syntax" not in doc.sections:
        raise ReferenceError(f"{where(cls)}: parses itself: its docstring needs a 'Syntax:' section")
    if "Example" not in doc.sections:
        raise ReferenceError(f"{where(cls)}: the docstring needs an 'Example:' section")
    if not doc.summary:
        raise ReferenceError(f"{where(cls)}: the docstring needs a summary")
    example = doc.sections["Example"]
    module = checked_example(cls, example)
    instance = next(op for op in module.walk() if isinstance(op, cls))

    def arity(field: object) -> str:
        if isinstance(field, OptOperandDef | OptPropertyDef):
            return "optional"
        return "variadic" if isinstance(field, VarOperandDef | VarResultDef) else ""

    options = [type(option).__name__ for option in definition.options]
    return OpEntry(
        name=cls.name,
        cls=cls,
        doc=doc,
        syntax=f"operation ::= `{cls.name}` {definition.assembly_format}" if declarative else doc.sections["Syntax"],
        declarative=declarative,
        verifies=verifies_of(cls),
        example=example,
        operands=[Field(n, describe_constraint(d.constr), arity(d)) for n, d in definition.operands],
        results=[Field(n, describe_constraint(d.constr), arity(d)) for n, d in definition.results],
        properties=[
            Field(n, describe_constraint(d.constr), arity(d))
            for n, d in definition.properties.items()
            if n != "operandSegmentSizes"
        ]
        + [Field(n, describe_constraint(d.constr), arity(d)) for n, d in definition.attributes.items()],
        regions=[
            Field(n, "single block" if isinstance(d, SingleBlockRegionDef) else "any") for n, d in definition.regions
        ],
        traits=sorted(describe_trait(t) for t in cls.traits) + [f"`{o}`" for o in options],  # OpTraits is a set
        effects=describe_effects(instance),
    )


@dataclass
class AttributeEntry:
    name: str
    """`#fusion.parallel`, `!hir.stream`"""
    kind: str
    """"attribute" or "type"."""
    cls: type[ParametrizedAttribute]
    doc: Docstring
    syntax: str
    parameters: list[Field]
    verifies: list[str]
    example: str


def attribute_entry(cls: type[ParametrizedAttribute]) -> AttributeEntry:
    doc = docstring_of(cls)
    name = attribute_name(cls).strip("`")
    if "Example" not in doc.sections:
        raise ReferenceError(f"{where(cls)}: the docstring needs an 'Example:' section")
    definition = cls.get_irdl_definition()
    if definition.parameters and "Syntax" not in doc.sections:
        raise ReferenceError(f"{where(cls)}: has parameters: its docstring needs a 'Syntax:' section")
    checked_example(cls, doc.sections["Example"])
    return AttributeEntry(
        name=name,
        kind="type" if issubclass(cls, TypeAttribute) else "attribute",
        cls=cls,
        doc=doc,
        syntax=doc.sections.get("Syntax", name),
        parameters=[Field(n, describe_constraint(d.constr)) for n, d in definition.parameters],
        verifies=verifies_of(cls),
        example=doc.sections["Example"],
    )


def directive_entries(ops: Sequence[type[IRDLOperation]]) -> list[tuple[str, str]]:
    """(name, docstring) of each custom directive the declarative formats use, in first-use order."""
    seen: dict[str, str] = {}
    for cls in ops:
        for directive in cls.get_irdl_definition().custom_directives.values():
            seen.setdefault(directive.__name__, inspect.cleandoc(directive.__doc__ or ""))
    return list(seen.items())


def anchor(name: str) -> str:
    """The GitHub anchor of a heading that is `name` in backquotes."""
    return re.sub(r"[^a-z0-9_ -]", "", name.lower()).replace(" ", "-")
