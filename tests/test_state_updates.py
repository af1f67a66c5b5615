"""
Buffers and arguments a compiled function updates in place are written back after each call, as
eager's in-place ops leave them: a gpt-fast KV cache filled at positions, a batch norm's running
statistics in training mode, a counter buffer, an argument updated through a view. Each case
runs the compiled function and an identical eager module side by side over several calls and
compares the results and the state after every call.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hir
from hir.frontend import FrontendError
from hir.frontend.specialize import CallError

CUDA = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


class KVCache(nn.Module):
    """gpt-fast's cache: the new keys and values written at `input_pos`, the whole cache returned."""

    def __init__(self, batch: int, heads: int, max_len: int, head_dim: int) -> None:
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(batch, heads, max_len, head_dim))
        self.register_buffer("v_cache", torch.zeros(batch, heads, max_len, head_dim))

    def update(self, input_pos: torch.Tensor, k_val: torch.Tensor, v_val: torch.Tensor):
        k_out, v_out = self.k_cache, self.v_cache
        k_out[:, :, input_pos] = k_val
        v_out[:, :, input_pos] = v_val
        return k_out, v_out


class CachedAttention(nn.Module):
    """gpt-fast's Attention at decoding: a causal mask row per position, SDPA over the cache."""

    def __init__(self, dim: int = 32, heads: int = 4, max_len: int = 16, batch: int = 2) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wqkv = nn.Linear(dim, 3 * dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.kv_cache = KVCache(batch, heads, max_len, self.head_dim)
        self.register_buffer("causal_mask", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def forward(self, x: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        bsz, seqlen, dim = x.shape
        q, k, v = self.wqkv(x).split(dim, dim=-1)
        q, k, v = (t.view(bsz, seqlen, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        k, v = self.kv_cache.update(input_pos, k, v)
        mask = self.causal_mask[None, None, input_pos]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).contiguous().view(bsz, seqlen, dim))


def _decode(compiled, eager: CachedAttention, module: CachedAttention, device: str = "cpu") -> None:
    """A prefill of 4 positions, then 4 decoding steps; results and caches compared after each call."""
    torch.manual_seed(1)
    steps = [torch.arange(4, device=device)] + [torch.tensor([p], device=device) for p in range(4, 8)]
    for pos in steps:
        x = torch.randn(2, len(pos), 32, device=device)
        with torch.no_grad():
            expected = eager(x, pos)
        torch.testing.assert_close(compiled(x, pos), expected)
        torch.testing.assert_close(module.kv_cache.k_cache, eager.kv_cache.k_cache)
        torch.testing.assert_close(module.kv_cache.v_cache, eager.kv_cache.v_cache)


def test_a_kv_cache_is_written_back_at_each_step() -> None:
    torch.manual_seed(0)
    module = CachedAttention().eval()
    eager = copy.deepcopy(module)
    compiled = hir.compile(module, (torch.randn(2, 4, 32), torch.arange(4)))
    _decode(compiled, eager, module)
    assert [u.name for u in compiled.signature.updates] == ["kv_cache.k_cache", "kv_cache.v_cache"]
    # Each cache's only reader is the index_copy of its new value: the program writes it in place.
    decoding = compiled.specialization(torch.randn(2, 1, 32), torch.tensor([7]))
    names = {k: s.name for k, s in enumerate(decoding.signature.inputs)}
    assert sorted(names[i] for i in decoding._donated.values()) == ["kv_cache.k_cache", "kv_cache.v_cache"]


class ReadThenWrite(nn.Module):
    """The cache read before its update too: not written in place (the read must see the old rows)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(4, 8))

    def forward(self, rows: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        before = self.cache.sum(0)
        self.cache[pos] = rows
        return before + self.cache.sum(0)


def test_a_buffer_read_besides_its_update_is_copied_back() -> None:
    module, eager = ReadThenWrite(), ReadThenWrite()
    compiled = hir.compile(module, (torch.randn(2, 8), torch.tensor([0, 1])))
    assert compiled._donated == {}
    for pos in (torch.tensor([0, 1]), torch.tensor([1, 3]), torch.tensor([2, 2])):
        rows = torch.randn(2, 8)
        torch.testing.assert_close(compiled(rows, pos), eager(rows, pos))
        torch.testing.assert_close(module.cache, eager.cache)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_kv_cache_is_written_back_at_each_replay() -> None:
    torch.manual_seed(0)
    module = CachedAttention().eval().cuda()
    eager = copy.deepcopy(module)
    compiled = hir.compile(module, (torch.randn(2, 4, 32, device="cuda"), torch.arange(4, device="cuda")))
    _decode(compiled, eager, module, "cuda")
    torch.cuda.synchronize()


class Counter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return x + self.calls


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
def test_a_buffer_counts_each_call_once(device: str) -> None:
    """The first call on a GPU times the program several times; the update is written once per call."""
    module = Counter().to(device)
    x = torch.randn(8, 4, device=device)
    compiled = hir.compile(module, (x,))
    for call in range(1, 5):
        torch.testing.assert_close(compiled(x), x + call)
        torch.testing.assert_close(module.calls, torch.full((4,), float(call), device=device))


def test_a_replaced_buffer_gets_the_update() -> None:
    module = Counter()
    x = torch.randn(8, 4)
    compiled = hir.compile(module, (x,))
    compiled(x)
    module.calls = torch.full((4,), 10.0)  # a new tensor: the next call reads it, and updates it
    torch.testing.assert_close(compiled(x), x + 11)
    torch.testing.assert_close(module.calls, torch.full((4,), 11.0))


def test_a_batch_norm_in_training_mode_updates_its_running_statistics() -> None:
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
    eager = copy.deepcopy(module)
    compiled = hir.compile(module, (torch.randn(4, 3, 10, 10),))
    for _ in range(3):
        x = torch.randn(4, 3, 10, 10) * 2 + 0.5
        with torch.no_grad():
            expected = eager(x)
        torch.testing.assert_close(compiled(x), expected)
        for name, buffer in eager.named_buffers():
            torch.testing.assert_close(dict(module.named_buffers())[name], buffer, msg=name)
    module.eval(), eager.eval()  # the eval program reads the running statistics the calls left
    x = torch.randn(4, 3, 10, 10)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), eager(x))


def _add_in_place(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x * 2


def _scale_columns(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x[:, :2].mul_(y)  # through a view of the argument
    return x.sum(dim=1)


def _fill(out: torch.Tensor, x: torch.Tensor) -> None:
    out.copy_(torch.tanh(x))  # an out= style function that returns nothing


@pytest.mark.parametrize(
    ("fn", "shapes"),
    [(_add_in_place, [(4, 5)]), (_scale_columns, [(3, 4), (3, 2)]), (_fill, [(6,), (6,)])],
    ids=["add_", "view-mul_", "out-copy_"],
)
def test_arguments_updated_in_place_are_written_back(fn, shapes) -> None:
    torch.manual_seed(0)
    compiled = hir.compile(fn, tuple(torch.randn(s) for s in shapes))
    for _ in range(2):
        args = [torch.randn(s) for s in shapes]
        eager_args = [a.clone() for a in args]
        expected = fn(*eager_args)
        result = compiled(*args)
        if expected is None:
            assert result is None
        else:
            torch.testing.assert_close(result, expected)
        for got, want in zip(args, eager_args):
            torch.testing.assert_close(got, want)


def test_an_update_on_a_mesh_is_a_located_error() -> None:
    with pytest.raises(FrontendError, match=r"test_state_updates.py:\d+: error: the program updates buffer 'calls'"):
        hir.compile(Counter(), (torch.randn(8, 4),), mesh=[0])


def test_an_updated_argument_that_shares_memory_with_another_is_a_call_error() -> None:
    """The program reads every argument as it was at the call: eager's `x + y` after `x.add_(1)` sees y updated too."""

    def add_then_sum(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x + y

    compiled = hir.compile(add_then_sum, (torch.randn(4), torch.randn(4)))
    a, b = torch.randn(4), torch.randn(4)
    torch.testing.assert_close(compiled(a.clone(), b), add_then_sum(a.clone(), b))
    for x, y in ((a, a), (a, a.view(2, 2).view(4))):
        with pytest.raises(CallError, match="updates argument 'x' in place, and argument 'y' shares its memory"):
            compiled(x, y)
    module = Counter()
    counted = hir.compile(module, (torch.randn(4),))
    with pytest.raises(CallError, match="updates the module's buffer 'calls' in place, and argument 'x' shares"):
        counted(module.calls)


class ComplexState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("phase", torch.zeros(4, dtype=torch.cfloat))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.phase.add_(x)  # a complex buffer updated in place
        return x * 2


def test_an_update_of_a_complex_buffer_is_a_located_error() -> None:
    with pytest.raises(
        FrontendError, match=r"test_state_updates.py:\d+: error: the program updates 'phase' in place, a complex"
    ):
        hir.compile(ComplexState(), (torch.randn(4),))
