"""
docs/ops.md is generated from the op classes (tools/gen_ops_doc.py) and must be up to date; the
generator refuses definitions it cannot document, naming the class's file and line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def

from hir.dialects import fusion, hir
from hir.dialects.hir import Hir
from hir.tools import gen_ops_doc
from hir.tools.op_reference import (
    ReferenceError,
    checked_example,
    describe_effects,
    docstring_of,
    op_entry,
    verifies_of,
)

OPS_MD = Path(__file__).resolve().parent.parent / "docs" / "ops.md"


def test_ops_md_is_up_to_date() -> None:
    generated = gen_ops_doc.generate()  # parses and verifies every example on the way
    assert OPS_MD.read_text() == generated, f"docs/ops.md is stale: regenerate it with `{gen_ops_doc.COMMAND}`"


def test_check_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert gen_ops_doc.main(["--check", str(OPS_MD)]) == 0
    stale = tmp_path / "ops.md"
    stale.write_text(OPS_MD.read_text().replace("dims = [0]", "dims [0]"))
    assert gen_ops_doc.main(["--check", str(stale)]) == 1
    assert f"is stale: regenerate it with `{gen_ops_doc.COMMAND}`" in capsys.readouterr().err


def test_every_op_and_type_has_a_section() -> None:
    text = OPS_MD.read_text()
    for dialect in (fusion.Fusion, Hir):
        for op in dialect.operations:
            assert f"\n### `{op.name}`\n" in text
    for heading in ("### `#fusion.parallel` attribute", "### `!hir.stream` type", "### `!hir.work` type"):
        assert heading in text


def test_an_op_section_has_syntax_example_checks_operands_and_effects() -> None:
    entry = op_entry(fusion.SumOp)
    assert entry.syntax == (
        "operation ::= `fusion.sum` $x `dims` `=` custom<IntList>($dims) attr-dict `:` type($x) `->` type($result)"
    )
    assert entry.example == "%s = fusion.sum %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>"
    # The checks of the op's own class and of its bases, most general first.
    assert [c.split()[0] for c in entry.verifies] == ["The", "`dims`"]
    assert [(f.name, f.constraint) for f in entry.operands] == [("x", "`tensor`")]
    assert [(f.name, f.constraint) for f in entry.properties] == [("dims", "dense array of integers")]
    assert entry.traits == ["`Pure`"]
    launch = op_entry(hir.LaunchOp)
    assert launch.effects == "read `hir.current_stream`, read `ins`, write `hir.device_queue`, write `outs`"
    assert launch.syntax.startswith("hir.launch ins(%arg = %buffer")  # its documented form: it parses itself
    assert [(f.name, f.arity) for f in launch.operands] == [("ins", "variadic"), ("outs", "variadic")]
    assert "`HasParent<fusion.segment>`" in op_entry(fusion.YieldOp).traits


def test_examples_with_free_values_become_functions() -> None:
    module = checked_example(hir.SynchronizeOp, "hir.synchronize %s")
    (function,) = module.ops
    assert [str(t) for t in function.function_type.inputs] == ["!hir.stream"]  # type: ignore[attr-defined]


def test_a_wrong_example_is_an_error_naming_the_class() -> None:
    # The syntax a user tried before the reference existed.
    with pytest.raises(
        ReferenceError, match=r"dialects/fusion/reductions.py:\d+ \(SumOp, Example:\): the example does not"
    ) as err:
        checked_example(fusion.SumOp, "%s = fusion.sum %x dims [0] : tensor<4x8xf32> -> tensor<8xf32>")
    assert "example of fusion.sum:1:25\n" in str(err.value)
    assert "Expected '='" in str(err.value)
    with pytest.raises(ReferenceError, match=r"does not parse and verify:\n.*result shape 4 does not match"):
        checked_example(fusion.SumOp, "%s = fusion.sum %x dims = [0] : tensor<4x8xf32> -> tensor<4xf32>")
    with pytest.raises(ReferenceError, match=r"\(SumOp, Example:\): the example has no fusion.sum op"):
        checked_example(fusion.SumOp, "%y = fusion.neg %x : tensor<4xf32> -> tensor<4xf32>")
    with pytest.raises(ReferenceError, match=r"write the example as hir-opt prints it:\n  hir.wait %w$"):
        checked_example(hir.WaitOp, "hir.wait %w {}")
    # Effects are named after the operands: an example passing one value twice cannot say which.
    in_place = "%w = hir.allreduce sum %a into %a mesh = [0, 1] : memref<4xf32>, memref<4xf32>"
    op = next(op for op in checked_example(hir.AllreduceOp, in_place).walk() if isinstance(op, hir.AllreduceOp))
    with pytest.raises(ReferenceError, match="one value as `input` and `output`: use distinct values"):
        describe_effects(op)


@irdl_op_definition
class UndocumentedVerifierOp(IRDLOperation):
    """
    An op whose verifier the docstring does not describe.

    Example:
        %y = test.undocumented %x : tensor<4xf32> -> tensor<4xf32>
    """

    name = "test.undocumented"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$x attr-dict `:` type($x) `->` type($result)"

    def verify_(self) -> None:
        pass


@irdl_op_definition
class NoExampleOp(IRDLOperation):
    """An op without an example."""

    name = "test.no_example"
    assembly_format = "attr-dict"


def test_a_definition_it_cannot_document_is_an_error_naming_file_and_line() -> None:
    with pytest.raises(
        ReferenceError, match=r"tests/test_ops_doc.py:\d+ \(UndocumentedVerifierOp\): defines verify_; say what"
    ):
        verifies_of(UndocumentedVerifierOp)
    with pytest.raises(
        ReferenceError, match=r"tests/test_ops_doc.py:\d+ \(NoExampleOp\): the docstring needs an 'Example:'"
    ):
        op_entry(NoExampleOp)


def test_docstring_sections() -> None:
    doc = docstring_of(hir.AllocateOp)
    assert doc.summary.startswith("A new buffer; dynamic extents are operands, one per `?`.")
    assert set(doc.sections) == {"Verifies", "Example"}
    assert doc.sections["Example"] == "%buf = hir.allocate(%n) : memref<?x8xf32>"
