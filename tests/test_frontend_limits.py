"""
docs/frontend.md's "Limits" section against the code: each bullet names its limit by a phrase of
`CHECKS`, whose check asserts that the limit still holds (the program is refused with a located
error, or the behaviour the bullet states). A bullet without a check, or a check whose phrase the
section lost, fails `test_every_limit_has_a_check`; a limit that stops holding fails its check, so
the section changes with the code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import hir
from hir.frontend import FrontendError
from hir.frontend.specialize import CallError

DOC = Path(__file__).resolve().parent.parent / "docs" / "frontend.md"
HERE = Path(__file__).name


def limits_section() -> str:
    text = DOC.read_text()
    start = text.index("\n## Limits\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def bullets() -> list[str]:
    return [" ".join(b.split()) for b in re.split(r"\n- ", limits_section())[1:]]


def refused(fn: object, args: tuple[torch.Tensor, ...], match: str, located: bool = True, **options: object) -> None:
    """hir.compile refuses `fn` with a FrontendError matching `match`, at this file's line when `located`."""
    with pytest.raises(FrontendError, match=match) as error:
        hir.compile(fn, args, **options)
    if located:
        assert str(error.value).startswith(str(Path(__file__))) or HERE in str(error.value), str(error.value)


def missing_ops() -> None:
    x = torch.randn(8, 4)
    refused(lambda x: torch.special.i0(x), (x,), "not supported by the fusion dialect")
    # The bullet's xfail(strict) case, which passes (XPASS: a failure) once the op is mapped.
    assert '"i0": (lambda x: torch.special.i0(x)' in (Path(__file__).parent / "test_frontend.py").read_text()


class _Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return x + self.calls


def _add_in_place(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x * 2


class _Drift(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(4), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.bias.add_(1)  # a (frozen) parameter updated in the forward
        return x + self.bias


def _branch(x: torch.Tensor) -> torch.Tensor:
    return x * 2 if x.sum() > 0 else x


def unsupported_programs() -> None:
    x = torch.randn(8, 4)
    # Random numbers on a mesh: each device would draw its own for a tensor it replicates.
    refused(torch.nn.Dropout(0.5).train(), (x,), "draws random numbers, which on a mesh", located=False, mesh=[0])
    refused(lambda x: x[torch.randperm(8)], (x,), "randperm.default draws random numbers in a way")
    refused(_Drift(), (x,), "updates parameter 'bias' in place")
    # On a mesh a rank's new value is its shard: updates of buffers and arguments are refused there.
    refused(_add_in_place, (x,), "updates input 'x' in place; on a mesh", mesh=[0])
    refused(_Counter(), (x,), "updates buffer 'calls' in place; on a mesh", mesh=[0])
    refused(lambda x: x[x > 0], (x,), "boolean mask")
    refused(_branch, (x,), "could not capture")  # at the line of the branch on data


def one_device_and_mesh_layouts() -> None:
    x = torch.randn(8, 4)
    refused(torch.relu, (x,), "a didx axis needs a mesh", located=False, in_layouts=["[didx, serial]"])
    linear = torch.nn.Linear(4, 8)
    refused(linear, (torch.randn(2, 8, 4),), r"on a mesh, activations are \[rows, columns\]", located=False,
            mesh=[0, 1], param_layouts={"weight": "[didx, serial]"})  # fmt: skip
    # Shards are even: 8 output features over 3 devices, 2 key/value heads over 4.
    refused(linear, (torch.randn(6, 4),), r"parameter 'weight': axis 0 of extent 8 does not split over 3 devices",
            located=False, mesh=[0, 1, 2], param_layouts={"weight": "[didx, serial]"})  # fmt: skip
    layouts = {"q.weight": "[didx, serial]", "kv.weight": "[didx, serial]"}
    refused(_FewKeyHeads(), (torch.randn(8, 16),), r"2 heads \(axis 2 of \[2, 4, 2, 4\]\) do not split over 4 devices",
            mesh=[0, 1, 2, 3], param_layouts=layouts)  # fmt: skip
    # A fused projection's output cut into its pieces and also read whole: each device holds one block.
    layouts = {"gate_up.weight": "[didx, serial]", "down.weight": "[serial, didx]", "whole.weight": "[serial, didx]"}
    refused(_FusedGateUp(), (torch.randn(4, 8),), r"aten.chunk.default of a column-parallel linear's output",
            mesh=[0, 1], param_layouts=layouts)  # fmt: skip


class _FusedGateUp(torch.nn.Module):
    """Phi-3's MLP (one column-parallel linear for the gate and the up projections, chunked), its output read whole too."""

    def __init__(self) -> None:
        super().__init__()
        self.gate_up, self.down = torch.nn.Linear(8, 32, bias=False), torch.nn.Linear(16, 8, bias=False)
        self.whole = torch.nn.Linear(32, 8, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fused = self.gate_up(x)
        gate, up = fused.chunk(2, dim=-1)
        return self.down(torch.nn.functional.silu(gate) * up) + self.whole(fused)


class _FewKeyHeads(torch.nn.Module):
    """Grouped-query attention's projections: 4 query heads, 2 key heads of width 4."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.kv = torch.nn.Linear(16, 16, bias=False), torch.nn.Linear(16, 8, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q(x).view(2, 4, 4, 4).transpose(1, 2)
        k = self.kv(x).view(2, 4, 2, 4).transpose(1, 2)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, k, enable_gqa=True)
        return a.transpose(1, 2).reshape(8, 16)


def parameters_keep_shape_and_dtype() -> None:
    x = torch.randn(8, 4)
    linear = torch.nn.Linear(4, 4)
    compiled = hir.compile(linear, (x,))
    compiled(x)
    linear.weight = torch.nn.Parameter(torch.randn(4, 4))  # replaced, same shape and dtype: read
    torch.testing.assert_close(compiled(x), linear(x))
    linear.weight = torch.nn.Parameter(torch.randn(4, 4, dtype=torch.float64))
    with pytest.raises(FrontendError, match="compile the module again"):
        compiled(x)
    tied = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
    tied[1].weight = tied[0].weight
    compiled = hir.compile(tied, (x,))
    tied[1].weight = torch.nn.Parameter(torch.randn(4, 4))  # untied: the program reads one tensor
    with pytest.raises(CallError, match=r"'1\.weight' was '0\.weight' .* compile the module again"):
        compiled(x)


def stream_axis_survives() -> None:
    x = torch.randn(8, 4)
    refused(lambda x: torch.softmax(x, dim=0), (x,), "drops the stream axis 0", in_layouts=["[stream(4), serial]"])


def inference_without_training() -> None:
    compiled = hir.compile(torch.relu, (torch.randn(8, 4),))
    with pytest.raises(CallError, match="requires grad, and this compiled function has no backward"):
        compiled(torch.randn(8, 4, requires_grad=True))


def shapes_are_specialized() -> None:
    compiled = hir.compile(torch.relu, (torch.randn(8, 4),))
    for rows in (8, 6):  # the example's shape, then another: a specialization each
        x = torch.randn(rows, 4)
        torch.testing.assert_close(compiled(x), torch.relu(x))
    assert len(compiled.specializations.keys) == 2


class _Position(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.offset = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.offset += x.shape[0]  # Python state advanced by each call
        return x * self.offset


def python_state_of_the_module() -> None:
    x = torch.randn(8, 4)
    refused(_Position(), (x,), "forward changes _Position's attribute 'offset'")
    scaled = torch.nn.Dropout(0.25).train()  # `p` read by the trace: a new value traces again
    compiled = hir.compile(scaled, (x,))
    scaled.p = 0.0
    torch.testing.assert_close(compiled(x), x)


def containers_of_tensors() -> None:
    x = torch.randn(8, 4)
    pair = (x, x)
    refused(
        lambda x, kv: x * kv[0],
        (x, pair),
        "argument 'kv' is a tuple of tensors",
        False,
        in_layouts=[None, "[stream, serial]"],
    )
    refused(lambda x, kv: x * kv[0], (x, pair), "not supported on a mesh", False, mesh=[0, 1])
    refused(lambda *xs: xs[0][0], (pair,), "takes \\*args or \\*\\*kwargs", False)


def _result_with_a_nan_derivative(u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return (u * 2).sum(), torch.sqrt(u - 1.0)  # d/du at u = 0.5: NaN


def zero_gradients_of_unused_results() -> None:
    u = torch.tensor([0.5, 2.0], requires_grad=True)
    compiled = hir.compile(_result_with_a_nan_derivative, (u,), training=True)
    compiled(u)[0].backward()
    assert torch.isnan(u.grad[0])  # eager: 2
    assert u.grad[1] == 2
    u.grad = None
    detached = hir.compile(
        lambda u: (lambda a, b: (a, b.detach()))(*_result_with_a_nan_derivative(u)), (u,), training=True
    )
    detached(u)[0].backward()
    torch.testing.assert_close(u.grad, torch.tensor([2.0, 2.0]))


CHECKS: dict[str, Callable[[], None]] = {
    "Ops the fusion dialect does not have": missing_ops,
    "In-place updates of parameters": unsupported_programs,
    "no didx layouts without a mesh": one_device_and_mesh_layouts,
    "changes shape or dtype after `hir.compile`": parameters_keep_shape_and_dtype,
    "A stream axis must survive": stream_axis_survives,
    "Without `training=True`": inference_without_training,
    "Shapes are not symbolic": shapes_are_specialized,
    "Python state that forward changes": python_state_of_the_module,
    "Containers of tensors as arguments": containers_of_tensors,
    "runs the step's one backward": zero_gradients_of_unused_results,
}


def test_every_limit_has_a_check() -> None:
    for bullet in bullets():
        named = [phrase for phrase in CHECKS if phrase in bullet]
        assert len(named) == 1, f"docs/frontend.md, Limits: a bullet needs one check in {HERE}: {bullet[:100]}"
    section = " ".join(limits_section().split())
    lost = [phrase for phrase in CHECKS if phrase not in section]
    assert not lost, f"checks whose limit docs/frontend.md no longer states: {lost}"


@pytest.mark.parametrize("phrase", list(CHECKS))
def test_limit_still_holds(phrase: str) -> None:
    CHECKS[phrase]()


def test_a_refused_trace_is_located_where_torch_names_the_line() -> None:
    """Without a frame of the user's on the traceback, the line torch names (`Caused by:`) locates it."""
    from hir.frontend.errors import capture_error

    here = Path(__file__)
    line = here.read_text().splitlines().index("def _branch(x: torch.Tensor) -> torch.Tensor:") + 2
    err = capture_error(RuntimeError(f"Could not guard on data-dependent expression\nCaused by: ({here}:{line} in f)"))
    assert str(err) == (
        f"{here}:{line}: error: torch.export could not capture the program: Could not guard on data-dependent "
        "expression\n    return x * 2 if x.sum() > 0 else x"
    )
    assert str(capture_error(ValueError("no line"), "the training step could not be traced")) == (
        "<capture>: error: the training step could not be traced: no line"
    )


def _relu_rows(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x).sum(0)


def test_a_value_imported_with_another_shape_than_torchs_is_an_error_at_its_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A mapping that disagrees with torch's shape (as a decomposition that differs between torch
    # versions could) must not reach a result of another shape.
    from hir.frontend import importer

    mapped = importer._import_node

    def flattening_relu(node, emitter, env, mode):  # type: ignore[no-untyped-def]
        value = mapped(node, emitter, env, mode)
        if node.target is torch.ops.aten.relu.default:
            return emitter.reshape(value, (12,), "relu")
        return value

    monkeypatch.setattr(importer, "_import_node", flattening_relu)
    with pytest.raises(hir.FrontendError) as error:
        hir.compile(_relu_rows, (torch.randn(4, 3),))
    line = _relu_rows.__code__.co_firstlineno + 1
    assert re.match(
        rf".*test_frontend_limits\.py:{line}: error: internal error: aten\.relu\.default was imported as a value "
        r"of shape \[12\] where torch computes \[4, 3\]",
        str(error.value),
    )
