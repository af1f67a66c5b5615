"""
The PyTorch frontend on one device: small torch functions and modules compiled with stream
layouts match eager torch on random inputs; the ops the fusion dialect lacks are xfail(strict)
with the missing op as the reason; errors name the ATen op and the user's line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import ModuleOp

import hir
from hir.diagnostics import LocatedError
from hir.frontend import ATEN_TABLE, FrontendError
from hir.passes.hide_communication import HideCommunicationPass

torch.manual_seed(0)


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class SwiGLU(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w1 = torch.nn.Linear(16, 24, bias=False)
        self.w3 = torch.nn.Linear(16, 24, bias=False)
        self.w2 = torch.nn.Linear(24, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Residual(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.register_buffer("scale", torch.rand(16) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc(torch.relu(x)) * self.scale


class Block(torch.nn.Module):
    """A pre-norm residual MLP block, as in a transformer."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.mlp = MLP()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(self.norm(x))


class TokenMLP(torch.nn.Module):
    """A linear on the tokens of a [B, S, H] batch: merged to [B*S, H], then viewed back."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        return torch.relu(self.fc(x.view(b * s, h))).view(b, s, h) + x


class Attention(torch.nn.Module):
    """Multi-head self-attention of a [B, S, H] batch, its projections on [B*S, H] tokens."""

    def __init__(self, hidden: int = 16, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(hidden, hidden) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        tokens = x.view(b * s, h)
        q, k, v = (p(tokens).view(b, s, self.heads, h // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        weights = torch.softmax(q @ k.transpose(-2, -1) * (h // self.heads) ** -0.5, dim=-1)
        heads = (weights @ v).transpose(1, 2).reshape(b * s, h)
        return self.o(heads).view(b, s, h) + x


def split_heads(x: torch.Tensor) -> torch.Tensor:
    """[T, H] -> [T, heads, head_dim]: a softmax per head, and back; T (streamed) stays the outer axis."""
    t, h = x.shape
    return torch.softmax(x.view(t, 4, h // 4), dim=-1).view(t, h) * x


def rms_norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


X = (8, 16)
STREAM = "[stream, serial]"
CHUNKS = "[stream(2), serial]"
BATCH = (4, 8, 16)
STREAM3 = "[stream, serial, serial]"

# name -> (function or module, input shapes, in_layouts)
SUPPORTED: dict[str, tuple[Callable[..., torch.Tensor], list[tuple[int, ...]], list[str | None]]] = {
    "relu": (torch.relu, [X], [STREAM]),
    "tanh_exp": (lambda x: torch.tanh(x) + torch.exp(-x.abs()), [X], [CHUNKS]),
    "sigmoid": (torch.sigmoid, [X], [STREAM]),
    "silu": (F.silu, [X], [CHUNKS]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [X], [STREAM]),
    "softmax": (lambda x: torch.softmax(x, dim=-1), [X], [CHUNKS]),
    "scalar_arithmetic": (lambda x: (x * 2.5 + 1.0) / 4.0 - 0.5, [X], [STREAM]),
    "rsub": (lambda x: 1.0 - x, [X], [STREAM]),
    "binary": (lambda x, y: torch.maximum(x, y) / (y.abs() + 1.0) - x * y, [X, X], [CHUNKS, CHUNKS]),
    "broadcast_row": (lambda x, b: x + b, [X, (16,)], [STREAM, None]),
    "broadcast_column": (lambda x, c: x * c, [X, (8, 1)], [STREAM, STREAM]),
    "square_cube": (lambda x: x.pow(2) + x**3, [X], [STREAM]),
    "cast": (lambda x: (x.to(torch.bfloat16) * 2).to(torch.float32), [X], [STREAM]),
    "sum_mean_amax": (
        lambda x: x.sum(-1, keepdim=True) + x.mean(-1, keepdim=True) - x.amax(-1, keepdim=True),
        [X],
        [CHUNKS],
    ),
    "transpose_matmul": (lambda x, w: x @ w.t(), [X, (12, 16)], [STREAM, None]),
    "permute": (lambda x: x.permute(1, 0, 2).relu(), [(4, 8, 16)], [None]),
    "unsqueeze_expand": (lambda x: x.unsqueeze(1).expand(8, 3, 16).tanh(), [X], [STREAM]),
    "view_unit_axes": (lambda x: x.view(8, 1, 16).relu().view(8, 16), [X], [STREAM]),
    "bmm": (torch.bmm, [(4, 8, 16), (4, 16, 8)], ["[stream, serial, serial]", "[stream, serial, serial]"]),
    "mlp": (MLP(), [X], [STREAM]),
    "swiglu": (SwiGLU(), [X], [CHUNKS]),
    "residual_with_buffer": (Residual(), [X], [STREAM]),
    "serial": (lambda x: torch.softmax(x * 3.0, dim=0), [X], [None]),
    "gelu_erf": (F.gelu, [X], [STREAM]),
    "sqrt_rsqrt_reciprocal": (
        lambda x: x.abs().sqrt() + torch.rsqrt(x.abs() + 1) + torch.reciprocal(x + 9),
        [X],
        [CHUNKS],
    ),
    "pow_tensor": (lambda x, y: torch.pow(x.abs() + 0.5, y), [X, X], [STREAM, STREAM]),
    "rms_norm_decomposed": (rms_norm, [X], [STREAM]),
    "rms_norm": (torch.nn.RMSNorm(16), [X], [CHUNKS]),
    "layer_norm": (torch.nn.LayerNorm(16), [X], [STREAM]),
    "layer_norm_functional": (lambda x: F.layer_norm(x, (16,), eps=1e-3), [X], [STREAM]),
    "pre_norm_block": (Block(), [X], [STREAM]),
    "where_compare": (lambda x, y: torch.where(x > y, x, y * 0.1) + (x <= 0.5).float(), [X, X], [STREAM, STREAM]),
    "where_scalar": (lambda x: torch.where(x.abs() < 1.0, x, 0.0), [X], [CHUNKS]),
    "scatter_add": (lambda x: x.scatter_add(1, x.argsort(dim=1) % 5, x), [X], [STREAM]),
    "scatter_gates": (
        lambda x: torch.zeros_like(x).scatter(1, x.topk(2).indices, x.topk(2).values.softmax(-1)),
        [X],
        [STREAM],
    ),
    "scatter_value_repeated": (lambda x: x.scatter(1, x.argsort(dim=1)[:, :6] % 4, -1.0), [X], [None]),
    "reshape_keeps_rows": (lambda x: x.reshape(8, 4, 4).relu().reshape(8, 16), [X], [STREAM]),
    "reshape_serial": (lambda x: x.reshape(4, 32).tanh(), [X], [None]),
    # Views that split or merge the streamed axis (the stream goes on the outer factor).
    "view_merge_stream_axis": (lambda x: torch.relu(x.view(32, 4)), [(8, 4, 4)], [STREAM3]),
    "view_merge_stream_chunks": (
        lambda x: x.flatten(0, 1).exp().view(4, 8, 16),
        [BATCH],
        ["[stream(2), serial, serial]"],
    ),
    "view_split_stream_axis": (lambda x: x.view(4, 2, 16).tanh(), [X], [STREAM]),
    "view_split_stream_chunks": (lambda x: x.view(4, 2, 16).sigmoid().view(8, 16) + x, [X], [CHUNKS]),
    "view_split_heads": (split_heads, [X], [STREAM]),
    "view_tokens_linear_back": (TokenMLP(), [BATCH], [STREAM3]),
    "view_attention": (Attention(), [BATCH], [STREAM3]),
    "slice_narrow_select": (
        lambda x: x[:, 2:10:2].relu() + x.narrow(1, 0, 4) * x.select(1, 3).unsqueeze(1),
        [X],
        [STREAM],
    ),
    "concat": (lambda x, y: torch.cat([x.relu(), y], dim=-1), [X, X], [CHUNKS, CHUNKS]),
    "log_softmax": (lambda x: torch.log_softmax(x, dim=-1), [X], [STREAM]),
    "log_softmax_serial_rows": (lambda x: F.log_softmax(x, dim=0), [X], [None]),
    "log": (lambda x: torch.log(x.abs() + 0.5), [X], [CHUNKS]),
    "rotary": (lambda x: x * torch.cos(x) + torch.sin(x), [X], [STREAM]),
    "erf": (torch.erf, [X], [STREAM]),
    "full_like": (lambda x: x + torch.ones_like(x) * 2 + torch.full((8, 16), 0.25), [X], [STREAM]),
    "argmax": (lambda x: torch.argmax(x, dim=-1).float(), [X], [STREAM]),
}

# Ops the fusion dialect lacks today: each fails with an error naming the op, until its fusion op
# lands and the ATen table maps it; then the case passes and strict xfail asks for the marker's removal.
UNSUPPORTED: dict[str, tuple[Callable[..., torch.Tensor], list[tuple[int, ...]], str]] = {
    "i0": (lambda x: torch.special.i0(x), [X], "a Bessel function op"),
}


def _inputs(shapes: list[tuple[int, ...]]) -> list[torch.Tensor]:
    return [torch.randn(shape) for shape in shapes]


def _check(fn: Callable[..., torch.Tensor], shapes: list[tuple[int, ...]], layouts: list[str | None]) -> None:
    inputs = _inputs(shapes)
    compiled = hir.compile(fn, inputs, in_layouts=layouts)
    with torch.no_grad():
        expected = fn(*inputs)
    fresh = _inputs(shapes)  # compiled once, called on other tensors
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), expected)
        torch.testing.assert_close(compiled(*fresh), fn(*fresh))


@pytest.mark.parametrize("name", SUPPORTED)
def test_matches_eager(name: str) -> None:
    _check(*SUPPORTED[name])


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(raises=FrontendError, strict=True, reason=f"needs {reason}"))
        for name, (_, _, reason) in UNSUPPORTED.items()
    ],
)
def test_ops_the_dialect_lacks(name: str) -> None:
    fn, shapes, _ = UNSUPPORTED[name]
    _check(fn, shapes, [STREAM] * len(shapes))


def test_imported_module_is_fusion_ir_that_hir_opt_takes() -> None:
    x = torch.randn(X)
    module = hir.import_torch(MLP(), (x,), in_layouts=[STREAM])
    text = str(module)
    assert "%x: tensor<8x16xf32, #fusion.parallel<[stream, serial]>>" in text
    assert re.search(
        r"fusion.linear %x, %p_fc1_weight, %p_fc1_bias : .* -> tensor<8x32xf32, #fusion.parallel<\[stream, serial\]>>",
        text,
    )
    lowered = str(hir.run_pipeline(hir.parse(text), "stream-lowering{policy=contractions-standalone}"))
    assert "hir.stream_for" not in lowered  # expanded into fork and main loops
    assert "hir.for" in lowered
    # The two linears and gelu: three launches in the main loop, three buffers.
    assert lowered.count("hir.launch") == 3
    assert lowered.count("hir.allocate") == 3


def test_views_on_the_stream_axis_run_in_the_stream_loop() -> None:
    """[B, S, H] -> [B*S, H] streams B chunks of S tokens; the view back streams B again; no serial launch."""
    compiled = hir.compile(TokenMLP(), (torch.randn(BATCH),), in_layouts=[STREAM3])
    text = compiled.fusion_text
    merged = "tensor<32x16xf32, #fusion.parallel<[stream(4), serial]>>"
    assert f"fusion.reshape %x : tensor<4x8x16xf32, #fusion.parallel<[stream, serial, serial]>> -> {merged}" in text
    assert f"fusion.reshape %relu : {merged} -> tensor<4x8x16xf32, #fusion.parallel<[stream, serial, serial]>>" in text
    lowered = str(compiled.module)
    assert lowered.count("hir.for") == 2  # one stream loop: its fork loop and its main loop
    assert re.search(r"hir.alias_chunk %x\[%i\w*\] axis 0 chunks 4 : memref<4x8x16xf32>", lowered)
    assert re.search(
        r"fusion.linear %\w+, .* : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>", lowered
    )


def test_attention_with_head_views_streams_the_batch() -> None:
    compiled = hir.compile(Attention(), (torch.randn(BATCH),), in_layouts=[STREAM3])
    text = compiled.fusion_text
    assert "tensor<4x8x4x4xf32, #fusion.parallel<[stream, serial, serial, serial]>>" in text  # the heads, streamed on B
    lowered = str(compiled.module)
    # One stream loop of 4 iterations with its fork loop (the merge after the heads reads chunk i
    # of 4 of what the heads wrote at index i: the same memory, so hir-loop-fusion fuses them);
    # the softmax of one batch element per iteration.
    assert lowered.count("hir.for") == 2
    assert len(re.findall(r"hir.for %i\w* = %c0 to %c4 step %c1", lowered)) == 2
    assert re.search(r"fusion.softmax %\w+ dim = 2 : tensor<4x8x8xf32> -> tensor<4x8x8xf32>", lowered)
    assert "tensor<4x4x8x8xf32>" not in lowered  # no launch on the whole batch


def test_output_layout_adds_a_set() -> None:
    fn = torch.relu
    module = str(hir.import_torch(fn, (torch.randn(X),), out_layouts=[CHUNKS]))
    assert "fusion.set %relu : tensor<8x16xf32> -> tensor<8x16xf32, #fusion.parallel<[stream(2), serial]>>" in module


def test_multiple_outputs_and_module_options() -> None:
    def two(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x.relu(), x.sum(-1)

    x = torch.randn(X)
    compiled = hir.compile(two, (x,), in_layouts=[STREAM], num_streams=2)
    relu, total = compiled(x)
    torch.testing.assert_close(relu, x.relu())
    torch.testing.assert_close(total, x.sum(-1))


def test_every_table_entry_is_an_aten_overload() -> None:
    assert len(ATEN_TABLE) > 40
    for overload in ATEN_TABLE:
        assert isinstance(overload, torch._ops.OpOverload), overload
        assert overload.namespace == "aten"


def test_the_training_ops_are_hirs_own_and_documented() -> None:
    """The custom ops a training step records (frontend/training_ops.py) are in the hir namespace, listed in the docs."""
    from hir.frontend.aten_table import TRAINING_OPS_TABLE

    doc = (Path(__file__).resolve().parent.parent / "docs" / "frontend.md").read_text()
    # attention (with and without its statistics), layer_norm, rms_norm: each and its backward
    assert len(TRAINING_OPS_TABLE) == 8
    for overload in TRAINING_OPS_TABLE:
        assert isinstance(overload, torch._ops.OpOverload), overload
        assert overload.namespace == "hir"
        assert f"`{overload}`" in doc, overload


# -- errors ---------------------------------------------------------------------------------------

HERE = Path(__file__).name


def _line_of(text: str) -> int:
    return next(i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1) if text in line)


def test_unsupported_op_names_the_op_and_the_user_line() -> None:
    def cumulative(x: torch.Tensor) -> torch.Tensor:
        y = x.relu()
        return torch.special.i0(y)  # the line the error names

    with pytest.raises(FrontendError) as err:
        hir.compile(cumulative, (torch.randn(X),))
    message = str(err.value)
    assert message.startswith(f"{Path(__file__)}:{_line_of('the line the error names')}: error: aten.i0.default")
    assert "is not supported by the fusion dialect" in message
    assert message.endswith("return torch.special.i0(y)  # the line the error names")


def test_an_op_inside_nn_linear_is_located_at_the_call() -> None:
    class Wide(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(16, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.special.i0(self.fc(x).abs())  # i0: unsupported

    with pytest.raises(FrontendError, match=rf"{HERE}:{_line_of('# i0: unsupported')}: error: aten.i0.default"):
        hir.compile(Wide(), (torch.randn(X),))


def test_reducing_the_stream_axis_is_located() -> None:
    def column_sums(x: torch.Tensor) -> torch.Tensor:
        return x.sum(0)  # reduces the stream axis

    with pytest.raises(FrontendError) as err:
        hir.compile(column_sums, (torch.randn(X),), in_layouts=[STREAM])
    assert f"{HERE}:{_line_of('# reduces the stream axis')}: error: fusion.sum drops the stream axis 0" in str(
        err.value
    )


def test_merging_an_inner_stream_axis_is_located() -> None:
    def tokens(x: torch.Tensor) -> torch.Tensor:
        return x.view(32, 16).exp()  # merges the streamed S into B*S

    with pytest.raises(FrontendError) as err:
        hir.compile(tokens, (torch.randn(BATCH),), in_layouts=["[serial, stream, serial]"])
    message = str(err.value)
    assert message.startswith(f"{Path(__file__)}:{_line_of('# merges the streamed S')}: error: aten.view.default")
    assert "(4x8x16 -> 32x16) merges operand axes [0, 1] (4x8) into result axes [0] (32)" in message
    assert "the stream axis 1 is an inner factor" in message
    assert "stream operand axis 0 (the outer factor) instead" in message


def test_a_view_without_a_stream_layout_is_located() -> None:
    def regroup(x: torch.Tensor) -> torch.Tensor:
        return x.view(4, 6).exp()  # regroups 6x4 as 4x6

    with pytest.raises(FrontendError) as err:
        hir.compile(regroup, (torch.randn(6, 4),), in_layouts=[STREAM])
    message = str(err.value)
    assert f"{HERE}:{_line_of('# regroups 6x4 as 4x6')}: error: aten.view.default (6x4 -> 4x6) regroups" in message
    assert "use a stream(N) whose N divides both 6 and 4" in message


def test_a_split_changes_the_iteration_count() -> None:
    def round_trip(x: torch.Tensor) -> torch.Tensor:
        return x.view(4, 2, 16).view(8, 16) + x  # 4 iterations against 8

    with pytest.raises(FrontendError) as err:
        hir.compile(round_trip, (torch.randn(X),), in_layouts=[STREAM])
    message = str(err.value)
    assert f"{HERE}:{_line_of('# 4 iterations against 8')}: error: fusion.add" in message
    assert "(stream(4) on axis 0 and stream on axis 0 of the result)" in message


@pytest.mark.parametrize(
    ("layouts", "message"),
    [
        (["[stream]"], "layout '[stream]' has 1 axes, the tensor has 2"),
        (["[strem, serial]"], "cannot read the layout '[strem, serial]' at 'strem, serial'"),
        (["[stream(3), serial]"], "stream(3) does not divide axis 0 of extent 8"),
        (["[didx, serial]"], "a didx axis needs a mesh"),
        (["[stream, stream]"], "more than one stream axis"),
        (["[serial(2), serial]"], "only a stream axis takes a chunk count"),
        ([STREAM, STREAM], "in_layouts has 2 entries, the program has 1"),
    ],
)
def test_bad_layouts(layouts: list[str], message: str) -> None:
    with pytest.raises(FrontendError, match=re.escape(message)):
        hir.compile(torch.relu, (torch.randn(X),), in_layouts=layouts)


def test_unknown_parameter_layout() -> None:
    with pytest.raises(FrontendError, match=r"param_layouts names \['fc3.weight'\].*it has: fc1.weight"):
        hir.import_torch(MLP(), (torch.randn(X),), param_layouts={"fc3.weight": "[didx, serial]"})


def test_non_tensor_argument() -> None:
    """A number is a value the program is specialized for (another number: another specialization); a set is an error."""
    x = torch.randn(X)
    compiled = hir.compile(lambda x, n: x * n, (x, 3))
    torch.testing.assert_close(compiled(x, 3), x * 3)
    torch.testing.assert_close(compiled(x, 0.5), x * 0.5)
    assert len(compiled.specializations.keys) == 2
    with pytest.raises(FrontendError, match="example argument #1 is a set, not a tensor"):
        hir.compile(lambda x, n: x * min(n), (x, {3}))


def test_pass_options() -> None:
    compiled = hir.compile(torch.relu, (torch.randn(X),), in_layouts=[STREAM], policy="resharding-only")
    assert compiled.pipeline == "stream-lowering{policy=resharding-only}"
    with pytest.raises(FrontendError, match="go with a single pass"):
        hir.compile(torch.relu, (torch.randn(X),), pipeline="stream-lowering,cse", policy="resharding-only")
    with pytest.raises(FrontendError, match=r"<compile>: error: pass 'stream-lowering' has no option 'no-such-option'"):
        hir.compile(torch.relu, (torch.randn(X),), no_such_option=1)


def test_readme_example_runs_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("**From PyTorch**") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("```", start)]
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    exec(compile(code, "README.md", "exec"), {})
    assert "fusion.matmul %x, %w" in capsys.readouterr().out


def test_docs_list_every_table_entry() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "frontend.md").read_text()
    missing = [str(overload) for overload in ATEN_TABLE if f"`{overload}`" not in doc]
    assert not missing, f"docs/frontend.md does not list {missing}"


class _Structured(torch.nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> object:
        h = self.proj(x)
        if self.kind == "one-tuple":
            return (h,)
        if self.kind == "dict":
            return {"hidden": h, "gate": torch.sigmoid(h)}
        if self.kind == "with-none":  # as a Hugging Face model returns past_key_values=None
            return {"logits": h, "past_key_values": None, "states": (None, torch.relu(h))}
        return h, (torch.relu(h), {"sum": h.sum(-1)})


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("kind", ["one-tuple", "dict", "nested", "with-none"])
def test_the_compiled_function_returns_the_modules_structure(kind: str, training: bool) -> None:
    """A module's tuple of one, dict or nested result comes back in that structure, as eager returns it, None entries too."""
    torch.manual_seed(0)
    module = _Structured(kind)
    x = torch.randn(4, 8)
    expected, got = module(x), hir.compile(module, (x,), training=training)(x)
    assert torch.utils._pytree.tree_structure(got) == torch.utils._pytree.tree_structure(expected)
    for a, b in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(expected)):
        torch.testing.assert_close(a, b)
    if training:  # the gradients flow through the structure's tensors as through eager's
        for result in (expected, got):
            sum(leaf.sum() for leaf in torch.utils._pytree.tree_leaves(result) if leaf is not None).backward()
        eager = _Structured(kind)
        eager.load_state_dict(module.state_dict())
        sum(leaf.sum() for leaf in torch.utils._pytree.tree_leaves(eager(x)) if leaf is not None).backward()
        assert module.proj.weight.grad is not None
        torch.testing.assert_close(module.proj.weight.grad, 2 * eager.proj.weight.grad)


def test_a_layout_for_a_none_output_is_an_error_naming_it() -> None:
    x = torch.randn(4, 8)
    with pytest.raises(
        hir.FrontendError, match=re.escape("out_layouts gives output ['past_key_values'], which is None, a layout")
    ):
        hir.compile(_Structured("with-none"), (x,), out_layouts=[None, "[serial, serial]", None, None])


class _Masked(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * mask


@pytest.mark.parametrize("training", [False, True])
def test_arguments_may_be_passed_by_name(training: bool) -> None:
    torch.manual_seed(0)
    module = _Masked()
    x, mask = torch.randn(4, 8), (torch.rand(4, 8) > 0.5).float()
    compiled = hir.compile(module, (x, mask), training=training)
    torch.testing.assert_close(compiled(x, mask=mask), module(x, mask))
    torch.testing.assert_close(compiled(mask=mask, x=x), module(x, mask))
    for call, message in [
        (lambda: compiled(x, mask=mask, scale=mask), "has no argument 'scale' (its arguments: x, mask)"),
        (lambda: compiled(x, mask, x=x), "got argument 'x' twice"),
        (lambda: compiled(mask=mask), "is missing argument x"),
    ]:
        with pytest.raises(hir.FrontendError, match=re.escape(message)):
            call()


class _KeywordOnly(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, *, mask: torch.Tensor | None = None, scale: float = 1.0) -> torch.Tensor:
        h = self.proj(x) * scale
        return h if mask is None else h.masked_fill(mask, 0.0)


@pytest.mark.parametrize("training", [False, True])
def test_keyword_only_arguments_are_taken_by_name(training: bool) -> None:
    """`forward(x, *, mask=None)`: the example leaves them at their defaults; a call passes them by name."""
    torch.manual_seed(0)
    module = _KeywordOnly()
    x, mask = torch.randn(4, 8), torch.rand(4, 8) > 0.5
    compiled = hir.compile(module, (x,), training=training)
    for kwargs in ({}, {"mask": mask}, {"mask": mask, "scale": 2.0}, {"scale": 0.5}):
        with torch.set_grad_enabled(training):
            torch.testing.assert_close(compiled(x, **kwargs), module(x, **kwargs))
    assert compiled.specializations.signature.arg_names == ["x", "mask", "scale"]

    def add(x: torch.Tensor, *, y: torch.Tensor) -> torch.Tensor:  # no default: the example gives it after x
        return x + y

    compiled = hir.compile(add, (x, 2 * x))
    torch.testing.assert_close(compiled(x, y=mask.float()), x + mask.float())


def test_an_example_tensor_passed_by_name_is_an_inputs_error() -> None:
    x, mask = torch.randn(4, 8), torch.ones(4, 8)
    with pytest.raises(
        hir.FrontendError, match=re.escape("<inputs>: error: mask: a tensor passed to hir.compile by name")
    ):
        hir.compile(_Masked(), (x,), mask=mask)


@pytest.mark.parametrize(
    ("x_shape", "index_shape", "src_shape", "dim"),
    [
        ((4, 6), (4, 3), (4, 5), 1),  # src larger than the index: its leading block
        ((4, 6), (2, 3), (3, 4), 1),  # an index smaller than x off dim: a leading block of x
        ((5, 3, 4), (5, 3, 2), (5, 3, 2), 2),
        ((6, 4), (10, 4), (10, 4), 0),  # more entries than positions: repeats accumulate
        ((6, 4), (3, 2), (4, 4), -2),
    ],
)
def test_scatter_add_is_one_index_add_of_linear_positions(
    x_shape: tuple[int, ...], index_shape: tuple[int, ...], src_shape: tuple[int, ...], dim: int
) -> None:
    """Memory linear in the index: no [entries x extent] mask (an MoE dispatch's tokens x hidden x tokens)."""
    torch.manual_seed(len(x_shape) + dim)
    x, src = torch.randn(*x_shape), torch.randn(*src_shape)
    index = torch.randint(0, x_shape[dim], index_shape)

    def fn(x: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        return x.scatter_add(dim, index, src)

    compiled = hir.compile(fn, (x, index, src))
    torch.testing.assert_close(compiled(x, index, src), fn(x, index, src))
    assert "fusion.index_add" in compiled.fusion_text
    assert "fusion.sum" not in compiled.fusion_text


def test_an_moe_dispatch_with_scatter_add_matches_eager() -> None:
    """Expert outputs added back to their tokens' rows, as MoE layers write it."""
    tokens, hidden, picked = 16, 8, 12
    out, y = torch.zeros(tokens, hidden), torch.randn(picked, hidden)
    rows = torch.randint(0, tokens, (picked, 1))

    def combine(out: torch.Tensor, rows: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return out.scatter_add(0, rows.expand(-1, y.shape[1]), y)

    compiled = hir.compile(combine, (out, rows, y))
    torch.testing.assert_close(compiled(out, rows, y), combine(out, rows, y))


def test_a_scatter_add_index_out_of_range_is_an_error_not_another_rows_sum() -> None:
    x, src, index = torch.randn(4, 6), torch.randn(4, 3), torch.randint(0, 6, (4, 3))
    compiled = hir.compile(lambda x, i, s: x.scatter_add(1, i, s), (x, index, src))
    index[1, 1] = -1  # flattened, it would name row 0's last position
    with pytest.raises(LocatedError, match="index out of range"):
        compiled(x, index, src)


def test_a_scatter_with_an_index_smaller_than_x_is_a_located_error() -> None:
    """torch writes a leading block for an index smaller than x off `dim`; the frontend refuses it at the line."""
    x, index, src = torch.randn(6, 5), torch.randint(0, 5, (3, 2)), torch.randn(6, 3)
    with pytest.raises(FrontendError) as err:
        hir.compile(lambda x, i, s: x.scatter(1, i, s), (x, index, src))
    assert "test_frontend.py:" in str(err.value)
    assert "scatter: the index [3, 2] must have the shape of x [6, 5] off dim 1" in str(err.value)
    assert "x.scatter(1, i, s)" in str(err.value)  # the line of code


class _Embedded(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids)
        return self.fc(h)


@torch.no_grad()
def test_a_run_time_failure_names_the_users_line() -> None:
    """An id out of the embedding's range: the error names the line of `self.emb(ids)`, not the program's."""
    model, ids = _Embedded(), torch.randint(0, 10, (3, 5))
    compiled = hir.compile(model, (ids,))
    torch.testing.assert_close(compiled(ids), model(ids))
    ids[0, 0] = 12
    with pytest.raises(LocatedError) as err:
        compiled(ids)
    message = str(err.value)
    assert message.startswith(f"{__file__}:"), message
    assert "op failed at run time: index out of range" in message
    assert "h = self.emb(ids)" in message  # the line of code
    assert re.search(r"\(at <_Embedded>:\d+:\d+ of `fusion_text`\)", message), message


def test_a_pass_error_at_an_op_names_the_users_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lowering that refuses an op of the imported program: the error is told at the line that op came from."""

    lower = hir.run_pipeline

    def refuse_the_linear(module: ModuleOp, pipeline: str, **options: bool) -> ModuleOp:
        if pipeline == HideCommunicationPass.name:  # run on the imported module, before its lowering
            return lower(module, pipeline, **options)
        op = next(o for o in module.walk() if o.name in ("fusion.linear", "fusion.matmul"))
        raise LocatedError(op, "is refused here")

    monkeypatch.setattr(hir, "run_pipeline", refuse_the_linear)
    with pytest.raises(LocatedError) as err:
        hir.compile(_Embedded(), (torch.randint(0, 10, (3, 5)),))
    message = str(err.value)
    assert message.startswith(f"{__file__}:"), message
    assert "op is refused here" in message
    assert "return self.fc(h)" in message


def _batched_product(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x @ y).sum(0)


def test_a_stream_layout_the_lowering_refuses_names_the_users_line() -> None:
    """
    y streamed along its N axis: a slice of y is [B, K] and torch.matmul would read B as M, which
    stream-lowering refuses (a PassFailedException, no op object): told at the user's line too.
    """
    x, y = torch.randn(2, 8, 4), torch.randn(2, 4, 6)
    with pytest.raises(FrontendError) as err:
        hir.compile(_batched_product, (x, y), [None, "[serial, serial, stream]"])
    message = str(err.value)
    assert message.startswith(f"{__file__}:"), message
    assert "'fusion.matmul' op cannot run slice by slice on result axis 2" in message
    assert "return (x @ y).sum(0)" in message
    assert re.search(r"\(at <_batched_product>:\d+:\d+ of `fusion_text`\)", message), message


def test_an_empty_extent_broadcasts_as_torch_does() -> None:
    """An extent of 0 against 1 is 0 (torch's rule), not 1: an empty batch stays empty."""

    def add(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x + y, (x * 2).sum(0)

    x, y = torch.randn(0, 4), torch.randn(1, 4)
    got, expected = hir.compile(add, (x, y))(x, y), add(x, y)
    assert [t.shape for t in got] == [t.shape for t in expected] == [torch.Size([0, 4]), torch.Size([4])]
    torch.testing.assert_close(got[1], expected[1])
