"""
`fusion.sdpa` against eager `F.scaled_dot_product_attention` on random data: the op executed as
parsed (causal, boolean and float masks broadcast over batch or heads, a scale, any number of batch
axes), lowered into stream loops over the heads or the batch, on 2 ranks with the heads sharded
(or an operand sharded on L, S or E: gathered first), and imported from PyTorch by `hir.compile`
as one op; what cannot be split is a located error.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import hir
from hir.frontend import FrontendError


def _type(shape: tuple[int, ...], element: str = "f32", layout: str | None = None) -> str:
    encoding = f", #fusion.parallel<{layout}>" if layout else ""
    return f"tensor<{'x'.join(map(str, shape))}x{element}{encoding}>"


def _module(q, k, v, mask, attributes: str, layout: str | None = None, mask_element: str = "f32") -> str:
    out = (*q[:-1], v[-1])
    operands = [("q", q, "f32"), ("k", k, "f32"), ("v", v, "f32")] + ([("m", mask, mask_element)] if mask else [])
    args = ", ".join(f"%{n}: {_type(s, e)}" for n, s, e in operands)
    types = ", ".join(_type(s, e) for _, s, e in operands)
    masked = " mask %m" if mask else ""
    result = _type(out, "f32", layout)
    return (
        f"func.func @main({args}) -> {result} {{\n"
        f"  %o = fusion.sdpa %q, %k, %v{masked} {attributes} : {types} -> {result}\n"
        f"  func.return %o : {result}\n}}\n"
    )


CASES = [
    # name, q, k, v, mask shape, attributes, keyword arguments of F.scaled_dot_product_attention
    (
        "causal",
        (2, 4, 16, 8),
        (2, 4, 16, 8),
        (2, 4, 16, 8),
        None,
        "causal scale = 0.375",
        {"is_causal": True, "scale": 0.375},
    ),
    (
        "causal, L < S",
        (2, 4, 6, 8),
        (2, 4, 16, 8),
        (2, 4, 16, 4),
        None,
        "causal scale = 1.0",
        {"is_causal": True, "scale": 1.0},
    ),
    ("bool mask [L, S]", (2, 4, 16, 8), (2, 4, 12, 8), (2, 4, 12, 6), (16, 12), "scale = 0.25", {"scale": 0.25}),
    (
        "float mask over heads",
        (2, 4, 16, 8),
        (2, 4, 12, 8),
        (2, 4, 12, 6),
        (2, 1, 16, 12),
        "scale = 0.5",
        {"scale": 0.5},
    ),
    ("rank 3", (3, 16, 8), (3, 10, 8), (3, 10, 8), None, "scale = 0.125", {"scale": 0.125}),
]


def _inputs(case: tuple, generator: torch.Generator) -> list[torch.Tensor]:
    name, q, k, v, mask = case[:5]
    tensors = [torch.randn(s, generator=generator) for s in (q, k, v)]
    if mask is not None:
        if "bool" in name:
            keep = torch.rand(mask, generator=generator) > 0.3
            keep[..., 0] = True  # every query attends to something: no row of NaNs in either
            tensors.append(keep)
        else:
            tensors.append(torch.randn(mask, generator=generator))
    return tensors


def _expected(case: tuple, tensors: list[torch.Tensor]) -> torch.Tensor:
    q, k, v, *mask = tensors
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[0] if mask else None, **case[6])


STREAMED = [
    (case, stream) for case in CASES for stream in (None, "batch", "heads") if stream != "heads" or len(case[1]) == 4
]


@pytest.mark.parametrize(("case", "stream"), STREAMED, ids=[f"{c[0]}, {s or 'whole'}" for c, s in STREAMED])
def test_sdpa_matches_eager(case: tuple, stream: str | None) -> None:
    name, q, k, v, mask, attributes, _ = case
    rank = len(q)
    layout = None
    if stream is not None:
        kinds = ["serial"] * rank
        kinds[0 if stream == "batch" else 1] = (
            "stream" if stream == "heads" else "stream(2)" if q[0] % 2 == 0 else "stream"
        )
        layout = f"[{', '.join(kinds)}]"
    text = _module(q, k, v, mask, attributes, layout, "i1" if "bool" in name else "f32")
    tensors = _inputs(case, torch.Generator().manual_seed(3))
    expected = _expected(case, tensors)
    (reference,) = hir.execute(hir.parse(text), tensors)
    torch.testing.assert_close(reference, expected, rtol=1e-6, atol=1e-6)
    lowered = hir.run_pipeline(hir.parse(text), "stream-lowering")
    if stream is not None:
        assert "hir.for" in str(lowered)
    (got,) = hir.execute(lowered, tensors)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)


BACKWARD_CASES = [
    # name, shape [..., L, E], mask shape (None: causal or none), attributes
    ("causal", (2, 4, 16, 8), None, "causal scale = 0.375"),
    ("bool mask", (2, 4, 16, 8), (16, 16), "scale = 0.25"),
    ("float mask over heads", (2, 4, 12, 8), (2, 1, 12, 12), "scale = 0.5"),
    ("rank 3", (3, 10, 8), None, "scale = 0.125"),
]


def _math_gradients(tensors: list[torch.Tensor], causal: bool, scale: float) -> list[torch.Tensor]:
    """The reference: autograd of softmax(q k^T * scale + bias) v written out, in f64."""
    grad, q, k, v, *mask = (t.double() if t.is_floating_point() else t for t in tensors)
    q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) * scale
    L = q.shape[-2]
    if causal:
        scores = scores.masked_fill(~torch.ones(L, L, dtype=torch.bool).tril(), float("-inf"))
    elif mask:
        scores = scores.masked_fill(~mask[0], float("-inf")) if mask[0].dtype == torch.bool else scores + mask[0]
    (torch.softmax(scores, -1) @ v).backward(grad)
    return [t.grad.float() for t in (q, k, v)]  # type: ignore[union-attr]


@pytest.mark.parametrize("case", BACKWARD_CASES, ids=[c[0] for c in BACKWARD_CASES])
@pytest.mark.parametrize("stream", [None, "batch"])
def test_sdpa_backward_matches_the_math(case: tuple, stream: str | None) -> None:
    """fusion.sdpa_backward's three gradients, whole and streamed over the batch, on random data."""
    name, shape, mask, attributes = case
    layout = f"[{', '.join(['serial', 'stream', *['serial'] * (len(shape) - 1)])}]" if stream else None
    element = "i1" if "bool" in name else "f32"
    operands = [(n, shape, "f32") for n in ("g", "q", "k", "v")] + ([("m", mask, element)] if mask else [])
    args = ", ".join(f"%{n}: {_type(s, e)}" for n, s, e in operands)
    types = ", ".join(_type(s, e) for _, s, e in operands)
    result = _type((3, *shape), "f32", layout)
    text = (
        f"func.func @main({args}) -> {result} {{\n"
        f"  %d = fusion.sdpa_backward %g, %q, %k, %v{' mask %m' if mask else ''} {attributes} : {types} -> {result}\n"
        f"  func.return %d : {result}\n}}\n"
    )
    generator = torch.Generator().manual_seed(5)
    tensors = [torch.randn(shape, generator=generator) for _ in range(4)]
    if mask is not None:
        if "bool" in name:
            keep = torch.rand(mask, generator=generator) > 0.3
            keep[..., 0] = True
            tensors.append(keep)
        else:
            tensors.append(torch.randn(mask, generator=generator))
    scale = float(re.search(r"scale = ([\d.]+)", attributes).group(1))  # type: ignore[union-attr]
    expected = torch.stack(_math_gradients(tensors, "causal" in attributes, scale))
    lowered = hir.run_pipeline(hir.parse(text), "stream-lowering")
    assert ("hir.for" in str(lowered)) == (stream is not None)
    for program in (hir.parse(text), lowered):
        (got,) = hir.execute(program, tensors)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 3, 16, 8), (3, 16, 8)], ids=["rank 4", "rank 3"])
@pytest.mark.parametrize("causal", [True, False])
def test_sdpa_backward_calls_the_kernels_backward_on_this_thread(
    shape: tuple[int, ...], causal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    Where the fused kernel reads q, k and v themselves (4-D), the gradients come from its backward
    node called directly, not through the autograd engine; other ranks (reshaped views) go
    through the engine. Both against autograd through F.scaled_dot_product_attention.
    """
    from hir.runtime.attention_kernels import attention_gradients

    generator = torch.Generator().manual_seed(7)
    grad, q, k, v = (torch.randn(shape, generator=generator) for _ in range(4))
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    expected = torch.autograd.grad(F.scaled_dot_product_attention(*leaves, is_causal=causal, scale=0.4), leaves, grad)
    through_engine: list[int] = []
    real_grad = torch.autograd.grad

    def counted(*args: object, **kwargs: object) -> object:
        through_engine.append(1)
        return real_grad(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch.autograd, "grad", counted)
    got = attention_gradients(grad, q, k, v, None, causal, 0.4)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert len(through_engine) == (0 if len(shape) == 4 else 1)
    assert not any(t.requires_grad for t in got)  # called under grad mode, as a launch may be: no graph recorded


@pytest.mark.parametrize("shape", [(3, 16, 8), (2, 2, 4, 16, 8)], ids=["rank 3", "rank 5"])
def test_sdpa_kernel_takes_4d_views(shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """
    torch's fused kernels take 4-D inputs only (other ranks run the math path: f32 GEMMs and a
    materialized softmax on a GPU): the runtime flattens the batch axes first, and the result
    matches eager at the op's own rank, the mask broadcast along.
    """
    seen: list[int] = []
    real = F.scaled_dot_product_attention

    def recording(q: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        seen.append(q.dim())
        return real(q, *args, **kwargs)

    mask_shape = (shape[-2], shape[-2])
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    m = f"tensor<{'x'.join(map(str, mask_shape))}xi1>"
    text = f"""
func.func @main(%q: {t}, %k: {t}, %v: {t}, %m: {m}) -> {t} {{
  %y = fusion.sdpa %q, %k, %v mask %m scale = 0.5 : {t}, {t}, {t}, {m} -> {t}
  func.return %y : {t}
}}
"""
    generator = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(shape, generator=generator) for _ in range(3))
    keep = torch.rand(mask_shape, generator=generator) > 0.3
    keep[..., 0] = True
    expected = real(q, k, v, attn_mask=keep, scale=0.5)
    monkeypatch.setattr(F, "scaled_dot_product_attention", recording)
    (got,) = hir.execute(hir.run_pipeline(hir.parse(text), "stream-lowering"), [q, k, v, keep])
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    assert seen == [4]


def _causal(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2.0


def _masked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)


class Block(torch.nn.Module):
    """Llama-style attention with torch's fused attention: the heads are views of the projections."""

    def __init__(self, hidden: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (torch.nn.Linear(hidden, hidden) for _ in range(3))
        self.proj = torch.nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.heads, C // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


def test_frontend_imports_one_sdpa() -> None:
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 4, 16, 8, generator=g) for _ in range(3))
    mask = torch.rand(2, 1, 16, 16, generator=g) > 0.4
    mask[..., 0] = True
    compiled = hir.compile(_masked, (q, k, v, mask))
    assert compiled.fusion_text.count("fusion.sdpa") == 1
    assert "fusion.softmax" not in compiled.fusion_text
    assert "mask %mask scale = 3.000000e-01" in compiled.fusion_text
    torch.testing.assert_close(compiled(q, k, v, mask), _masked(q, k, v, mask))
    float_mask = torch.randn(16, 16, generator=g)
    compiled = hir.compile(_masked, (q, k, v, float_mask))
    torch.testing.assert_close(compiled(q, k, v, float_mask), _masked(q, k, v, float_mask))


def test_frontend_streams_heads() -> None:
    g = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(2, 4, 16, 8, generator=g) for _ in range(3))
    heads = "[serial, stream, serial, serial]"
    compiled = hir.compile(_causal, (q, k, v), [heads] * 3, heads)
    assert "scale = 0.35355339059327373" in compiled.fusion_text  # torch's 1/sqrt(E)
    torch.testing.assert_close(compiled(q, k, v), _causal(q, k, v))


def test_frontend_attention_block() -> None:
    torch.manual_seed(7)
    block = Block().eval()
    x = torch.randn(2, 16, 32)
    compiled = hir.compile(block, (x,), ["[stream, serial, serial]"], "[stream, serial, serial]")
    assert compiled.fusion_text.count("fusion.sdpa") == 1
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), block(x), rtol=1e-5, atol=1e-5)


def test_grouped_query_attention_matches_eager() -> None:
    """`enable_gqa=True`: each key and value head serves its group of query heads, as in torch."""

    def grouped(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    torch.manual_seed(3)
    q, k, v = torch.randn(2, 6, 8, 4), torch.randn(2, 2, 8, 4), torch.randn(2, 2, 8, 4)
    compiled = hir.compile(grouped, (q, k, v))
    assert compiled.fusion_text.count("fusion.sdpa") == 1
    torch.testing.assert_close(compiled(q, k, v), grouped(q, k, v), rtol=1e-5, atol=1e-5)
    # 5 query heads over 2 key heads: torch refuses it while capturing, and says so.
    with pytest.raises(FrontendError, match=r"could not capture the program: Number of heads in key and value"):
        hir.import_torch(grouped, (torch.randn(2, 5, 8, 4), k, v))


def test_streamed_queries_are_a_located_error() -> None:
    q, k, v = torch.randn(3, 2, 16, 8).unbind(0)
    rows = "[serial, stream(2), serial]"
    with pytest.raises(FrontendError, match=r"test_attention.py:\d+: error: fusion.sdpa drops the stream axis 1"):
        hir.import_torch(_causal, (q, k, v), [rows, None, None])


def _mesh_module(q: str, k: str, v: str, out: str, mask: str | None = None) -> str:
    """`@main` of one fusion.sdpa on [2, 4, 16, 8] tensors over the mesh [0, 1], layouts as given."""

    def t(layout: str | None, shape: str = "2x4x16x8") -> str:
        return f"tensor<{shape}xf32, #fusion.parallel<{layout}, mesh = [0, 1]>>" if layout else f"tensor<{shape}xf32>"

    operands = [("q", t(q)), ("k", t(k)), ("v", t(v))] + ([("m", t(mask, "16x16"))] if mask else [])
    args = ", ".join(f"%{n}: {ty}" for n, ty in operands)
    masked = " mask %m" if mask else " causal"
    return (
        f"func.func @main({args}) -> {t(out)} {{\n"
        f"  %o = fusion.sdpa %q, %k, %v{masked} scale = 0.25 : {', '.join(ty for _, ty in operands)} -> {t(out)}\n"
        f"  func.return %o : {t(out)}\n}}\n"
    )


HEADS = "[serial, didx, serial, serial]"
MESH_MODULES = {
    # heads sharded and the batch streamed: no communication
    "heads": _mesh_module(HEADS, HEADS, HEADS, "[stream, didx, serial, serial]"),
    # keys sharded over their sequence, values over their embedding: gathered, then attention
    "gathered_keys": _mesh_module(None, "[serial, serial, didx, serial]", "[serial, serial, serial, didx]", None),
    # heads sharded, a mask sharded over its rows: the mask is gathered
    "gathered_mask": _mesh_module(HEADS, HEADS, HEADS, HEADS, "[didx, serial]"),
}


@pytest.mark.distributed
def test_sdpa_on_two_gloo_ranks(tmp_path: Path) -> None:
    """Lowered (nccl), run on 2 ranks with 1 and 3 streams, against the reference on the unsharded inputs."""
    from test_distributed import run_driver_job

    paths = []
    for name, text in MESH_MODULES.items():
        (path := tmp_path / f"{name}.mlir").write_text(text)
        paths.append(path)
    run_driver_job(paths, pipelines=("nccl",))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_block_runs_torch_fused_attention_on_gpu() -> None:
    """On a GPU the compiled block calls torch's fused attention kernel, as eager does, and matches it."""
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(8)
    block = Block(hidden=256, heads=4).cuda().to(torch.bfloat16).eval()
    x = torch.randn(4, 128, 256, device="cuda", dtype=torch.bfloat16)
    compiled = hir.compile(block, (x,), ["[stream, serial, serial]"], "[stream, serial, serial]", cuda_graph=False)
    with torch.no_grad():
        expected = block(x)
        compiled(x)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            got = compiled(x)
            torch.cuda.synchronize()
    kernels = [e.name.lower() for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert any(k in name for name in kernels for k in ("flash", "fmha", "efficient_attention", "cudnn")), kernels
    assert not any("softmax" in name for name in kernels), kernels  # not the decomposed matmul-softmax-matmul
    torch.testing.assert_close(got, expected, rtol=2e-2, atol=2e-2)


def test_attention_block_benchmark_on_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/attention_block.py's measurement on CPU (small, one repetition): its variants match eager."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import attention_block

    argv = ["--device", "cpu", "--reps", "1", "--warmup", "0", "--no-torch-compile", "--batch", "2", "--seq", "8"]
    assert attention_block.main([*argv, "--first-launch"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in ("eager", "hir", "hir stream(2)")), out
    for name in ("eager", "hir"):  # the host's time to each one's first GEMM
        assert re.search(rf"first GEMM launch, {re.escape(name)}: \d+\.\d us after the call", out), out
