"""
Pass pipelines in `-p` syntax (`stream-lowering{policy=resharding-only backend=copy-engine},cse`):
parsed with one-line errors that name the pass and the option, described for `--help`, and expanded
into stages. A pass that is itself a pipeline (it has a `stages()` method, like `stream-lowering`)
is replaced by its stages, so that drivers verify, time and print the IR after each of them.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.utils.hints import isa

PassFactory = Callable[[], type[ModulePass]]


def one_of(default: str, choices: Iterable[str]) -> Any:
    """
    The dataclass field of a string option with a fixed set of values (`backend: str = one_of("nccl",
    BACKENDS)`): `--list-passes` and `--help` show its values from here, so they are the pass's own.
    """
    values = tuple(choices)
    assert default in values, f"default '{default}' is not one of {values}"
    return dataclasses.field(default=default, metadata={"choices": values})


def require_one_of(option: str, value: str, choices: Iterable[str]) -> None:
    """A pass's `__post_init__` check of an option with a fixed set of values (one-line ValueError)."""
    if value not in choices:
        raise ValueError(f"{option} must be one of {', '.join(choices)}, got '{value}'")


class PipelineError(ValueError):
    """A pipeline that cannot be built: syntax error, unknown pass or option, bad option value."""


@dataclass(frozen=True)
class PassOption:
    """One option of a pass, as `-p 'pass{name=value}'` spells it."""

    name: str
    type: str
    default: str | None  # None: the option has no default
    choices: tuple[str, ...] = ()  # the allowed values of a string option declared with `one_of`

    def __str__(self) -> str:
        return f"{self.name}: {self.type}" + (f" = {self.default}" if self.default is not None else "")

    def described(self) -> str:
        """`backend: str = nccl (one of: nccl, copy-engine, ring)`, as --list-passes and --help show it."""
        return str(self) + (f" (one of: {', '.join(self.choices)})" if self.choices else "")


def pass_options(cls: type[ModulePass]) -> tuple[PassOption, ...]:
    hints = typing.get_type_hints(cls)
    return tuple(
        PassOption(
            field.name.replace("_", "-"),
            _type_name(hints[field.name]),
            _default_text(field),
            tuple(field.metadata.get("choices", ())),
        )
        for field in _option_fields(cls)
    )


def pass_summary(cls: type[ModulePass]) -> str:
    """The first sentence of the pass's own docstring ('' when it has none, not an inherited one)."""
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    paragraph = " ".join(doc.split("\n\n")[0].split())
    return re.split(r"(?<=\.)\s", paragraph, maxsplit=1)[0]


def parse_pass_pipeline(spec: str, available: Mapping[str, PassFactory]) -> tuple[ModulePass, ...]:
    """The passes of `spec`, in order; raises PipelineError with a one-line message."""
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as err:  # a BaseException in xDSL: keep it from escaping as one
        raise PipelineError(_syntax_message(spec, str(err))) from None
    return tuple(_build_pass(arg_spec, available) for arg_spec in specs)


def expand_stages(passes: Iterable[ModulePass]) -> tuple[ModulePass, ...]:
    """`passes` with every pipeline pass (one with a `stages()` method) replaced by its stages, recursively."""
    return tuple(stage for p in passes for stage in _stages_of(p))


def _stages_of(p: ModulePass) -> tuple[ModulePass, ...]:
    stages = getattr(p, "stages", None)
    return expand_stages(stages()) if callable(stages) else (p,)


def _build_pass(spec: ArgSpec, available: Mapping[str, PassFactory]) -> ModulePass:
    if spec.name not in available:
        close = difflib.get_close_matches(spec.name, available, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise PipelineError(f"unknown pass '{spec.name}'{hint} (available passes: {', '.join(available)})")
    cls = available[spec.name]()
    fields = {field.name: field for field in _option_fields(cls)}
    hints = typing.get_type_hints(cls)
    for key, values in spec.parameters.items():
        field_name = key.replace("-", "_")
        if field_name not in fields:
            options = ", ".join(str(o) for o in pass_options(cls))
            known = f"its options: {options}" if options else "it has no options"
            raise PipelineError(f"pass '{spec.name}' has no option '{key}' ({known})")
        expected = hints[field_name]
        if not _fits(values, expected):
            shown = ",".join(str(v).lower() if isinstance(v, bool) else str(v) for v in values)
            wanted = _type_name(expected)
            if not values:
                raise PipelineError(f"option '{key}' of pass '{spec.name}' needs a value: {key}=<{wanted}>")
            raise PipelineError(f"option '{key}' of pass '{spec.name}' expects {wanted}, got '{shown}'")
    try:
        return cls.from_spec(spec)
    except Exception as err:  # what the checks above do not foresee: a required option, a pass's own validation
        raise PipelineError(f"invalid options for pass '{spec.name}': {err}") from None


def _fits(values: tuple[object, ...], expected: object) -> bool:
    """Whether xDSL's ArgSpec conversion accepts `values` for an option of type `expected`."""
    if not values:
        return type(None) in typing.get_args(expected)
    return (len(values) == 1 and isa(values[0], expected)) or isa(values, expected)


def _option_fields(cls: type[ModulePass]) -> list[dataclasses.Field]:
    return [field for field in dataclasses.fields(cls) if field.init and field.name != "name"]


def _type_name(t: object) -> str:
    return t.__name__ if isinstance(t, type) and not isinstance(t, types.GenericAlias) else str(t)


def _default_text(field: dataclasses.Field) -> str | None:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return None
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


_SPEC_POSITION = re.compile(r"^pass-pipeline:\d+:(\d+)$", re.MULTILINE)


def _syntax_message(spec: str, error_text: str) -> str:
    """One line from xDSL's multi-line ArgSpecParseError text: where, in which pass and option, what."""
    lines = [line.strip() for line in error_text.splitlines() if line.strip()]
    what = lines[-1].removesuffix(" here") if lines else "syntax error"
    what = what[:1].lower() + what[1:]
    position = _SPEC_POSITION.search(error_text)
    if position is None:
        return f"malformed pass pipeline '{spec}': {what}"
    column = int(position.group(1))
    where = _where(spec, column - 1)
    message = f"malformed pass pipeline '{spec}' at column {column}{where}: {what}"
    fixed = _options_with_spaces(spec)
    if fixed != spec and spec[column - 1 : column] == "=":
        message += f"; options are separated by spaces, not commas: '{fixed}'"
    return message


def _where(spec: str, index: int) -> str:
    """`' (in the options of 'p', after option 'o')'` for the character at `index` of `spec`."""
    opening = spec.rfind("{", 0, index + 1)
    if opening != -1 and spec.rfind("}", 0, index) < opening:
        owner = re.search(r"([\w-]+)\s*$", spec[:opening])
        options = re.findall(r"([\w-]+)=", spec[opening + 1 : index])
        where = f" (in the options of '{owner.group(1)}'" if owner else " (in pass options"
        return where + (f", after option '{options[-1]}')" if options else ")")
    element = re.match(r"\s*([\w-]+)", spec[:index].rsplit(",", 1)[-1])
    return f" (after pass '{element.group(1)}')" if element else ""


def _options_with_spaces(spec: str) -> str:
    """`spec` with `,` before `key=` inside `{...}` turned into a space: the usual mistake in options."""
    return re.sub(r"\{[^{}]*\}", lambda m: re.sub(r",\s*(?=[\w-]+=)", " ", m.group(0)), spec)
