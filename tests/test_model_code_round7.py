"""
Model code as users write it, compiled with `hir.compile` against eager torch (CPU): Python values a
module keeps as plain attributes (a scale a user sets between calls, a decode offset that forward
advances), for inference and for training.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
import torch.nn.functional as F

import hir
from hir.frontend import FrontendError


def _seeded(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


class _Scaled(torch.nn.Module):
    """A head whose temperature is a Python float set between calls; a long input reads a second one."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.temperature = 1.0
        self.long_scale = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x) / self.temperature
        if x.shape[0] > 3:  # only the traces of long inputs read it
            y = y * self.long_scale
        return y.softmax(-1)


@pytest.mark.parametrize("training", [False, True])
def test_a_python_attribute_changed_between_calls_runs_a_program_traced_with_its_value(training: bool) -> None:
    # The trace takes `self.temperature` as a constant: a call after `model.temperature = 0.5`
    # ran the program traced with 1.0 (the module's parameters are read at every call, its plain
    # attributes were not), a silent wrong answer.
    torch.manual_seed(0)
    model = _Scaled()
    short, long = _seeded(2, 4, seed=1), _seeded(5, 4, seed=2)
    compiled = hir.compile(model, (short,), training=training)
    steps = [(1.0, 2.0, short), (0.5, 2.0, short), (1.0, 2.0, short)]
    if not training:  # a new shape's trace reads `long_scale` first, which a later call changes
        steps += [(0.5, 2.0, long), (0.5, 3.0, long)]
    for temperature, long_scale, x in steps:
        model.temperature, model.long_scale = temperature, long_scale
        with torch.set_grad_enabled(training):
            got, want = compiled(x), model(x)
        torch.testing.assert_close(got, want, msg=lambda m, t=temperature, s=long_scale: f"{t}, {s}: {m}")
        if training:
            got.pow(2).sum().backward()
            grad = model.proj.weight.grad.clone()
            model.zero_grad()
            want.pow(2).sum().backward()
            torch.testing.assert_close(grad, model.proj.weight.grad)
            model.zero_grad()


@dataclasses.dataclass
class _Config:
    """A model's configuration object, as Hugging Face models hold one: attributes and a class default."""

    scale: float = 1.0
    shift = 0.0


class _Configured(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = _Config()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * self.config.scale + self.config.shift


def test_a_field_of_the_modules_config_object_changed_between_calls_is_read() -> None:
    # The configuration's values were the trace's constants at every later call.
    model = _Configured()
    x = _seeded(2, 4, seed=1)
    with torch.no_grad():
        compiled = hir.compile(model, (x,))
        for scale, shift in ((1.0, 0.0), (3.0, 0.0), (3.0, 0.5), (1.0, 0.0)):
            model.config.scale = scale
            if shift != 0.0:
                model.config.shift = shift  # the instance's own, over the class's default
            else:
                vars(model.config).pop("shift", None)
            torch.testing.assert_close(compiled(x), model(x))
    assert type(model.config) is _Config
    assert "shift" not in vars(model.config)


@pytest.mark.parametrize("training", [False, True])
def test_a_hook_registered_or_removed_after_the_first_call_is_run_as_in_eager(training: bool) -> None:
    # The trace runs the hooks into the program: a hook added later (a feature extractor's, one
    # that scales an output) was never run, and one removed later still was. torch's global
    # hooks run on each of the model's modules, not on those torch.export calls around them.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
    x = _seeded(2, 4, seed=1)
    compiled = hir.compile(model, (x,), training=training)

    def scale(module: torch.nn.Module, args: tuple[torch.Tensor, ...], out: torch.Tensor) -> torch.Tensor:
        return out * 3

    handles = []
    for step in range(4):
        if step == 1:
            handles.append(model[0].register_forward_hook(scale))
        if step == 2:  # torch's global hooks, of every module: a forward one broke the capture (a ValueError)
            handles.append(torch.nn.modules.module.register_module_forward_pre_hook(lambda m, a: (a[0] + 1,)))
            handles.append(torch.nn.modules.module.register_module_forward_hook(lambda m, a, out: out * 2))
        if step == 3:
            handles.pop(0).remove()
        with torch.set_grad_enabled(training):
            torch.testing.assert_close(compiled(x), model(x), msg=lambda m, step=step: f"step {step}: {m}")
    for handle in handles:
        handle.remove()


class _Decoder(torch.nn.Module):
    """A decode step that keeps its position as a Python int and advances it in forward."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.register_buffer("pe", torch.randn(16, 4))
        self.offset = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        steps = x.shape[1]
        out = self.proj(x) + self.pe[self.offset : self.offset + steps]
        self.offset += steps
        return out


@pytest.mark.parametrize("training", [False, True])
def test_an_attribute_that_forward_advances_is_an_error_at_its_assignment(training: bool) -> None:
    # Every call of the compiled program read the offset of the trace (0), where eager reads the
    # one the previous call left: the positions of the second step were those of the first.
    model = _Decoder()
    expected = (
        rf"{re.escape(__file__)}:\d+: error: forward changes _Decoder's attribute 'offset' \(0, then 3\), .*"
        r"every call would read 0\. Pass it as an argument .*\n    self\.offset \+= steps"
    )
    x = _seeded(2, 3, 4, seed=1)
    if training:  # a training step traces at its first call
        compiled = hir.compile(model, (x,), training=True)
        with pytest.raises(FrontendError, match=expected):
            compiled(x)
    else:
        with pytest.raises(FrontendError, match=expected):
            hir.compile(model, (x,))
    assert model.offset == 0  # the trace's change is undone


def _one_hot_of_its_largest_class(labels: torch.Tensor) -> torch.Tensor:
    return F.one_hot(labels).float()


def test_one_hot_without_its_class_count_says_to_pass_it() -> None:
    # The error was torch's "Could not extract specialized integer from data-dependent expression u0
    # (unhinted: u0).  (Size-like symbols: none)", with no word of what to change.
    expected = (
        rf"{re.escape(__file__)}:\d+: error: torch\.export could not capture the program: the code needs a "
        r"number computed from a tensor's values .*: F\.one_hot\(x\) without num_classes takes the count of "
        r"classes from x's largest value: pass num_classes\n    return F\.one_hot\(labels\)\.float\(\)"
    )
    with pytest.raises(FrontendError, match=expected):
        hir.compile(_one_hot_of_its_largest_class, (torch.tensor([[0, 3], [2, 1]]),))


class _StyleNorms(torch.nn.Module):
    """Instance norms (a style-transfer or a VAE block's) and a batch norm without running statistics."""

    def __init__(self) -> None:
        super().__init__()
        self.plain = torch.nn.InstanceNorm2d(6)
        self.affine = torch.nn.InstanceNorm1d(6, affine=True)
        self.batch = torch.nn.BatchNorm2d(6, track_running_stats=False)
        for norm in (self.affine, self.batch):
            torch.nn.init.normal_(norm.weight)
            torch.nn.init.normal_(norm.bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.plain(x), self.affine(x.flatten(2)), self.batch(x)


def test_instance_norm_of_bf16_rounds_as_torchs_kernel() -> None:
    # torch's decomposition normalized `(x - mean) / std` with f32 statistics; the CPU kernel
    # stores them in bf16 and computes `x * a + b`: about one element in ten was 1 ulp off.
    torch.manual_seed(0)
    model = _StyleNorms().to(torch.bfloat16).eval()
    calls = [
        (_seeded(2, 6, 5, 7, seed=1, dtype=torch.bfloat16) * 3 + 1,),
        (_seeded(3, 6, 4, 9, seed=2, dtype=torch.bfloat16),),
    ]
    with torch.no_grad():
        compiled = hir.compile(model, calls[0])
        for args in calls:
            torch.testing.assert_close(compiled(*args), model(*args), rtol=0, atol=0)


class _NormedEmbedding(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(20, 4, max_norm=1.0)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.emb(ids).sum(1)


def test_an_embeddings_max_norm_is_an_error_that_says_how_to_rescale_once() -> None:
    # The refusal said "return the new value instead", which the code of nn.Embedding cannot do.
    model = _NormedEmbedding()
    ids = torch.tensor([[1, 7, 3], [4, 4, 19]])
    expected = (
        rf"{re.escape(__file__)}:\d+: error: the program updates parameter 'emb\.weight' in place; .*"
        r"rescale every row once before compiling, `weight\.copy_\(torch\.renorm\(weight, p, 0, max_norm\)\)`"
    )
    with pytest.raises(FrontendError, match=expected):
        hir.compile(model, (ids,))
    with torch.no_grad():
        want = model(ids)
        model.emb.weight.copy_(torch.renorm(model.emb.weight, 2, 0, 1.0))  # the advice, which eager agrees with
        model.emb.max_norm = None
        torch.testing.assert_close(hir.compile(model, (ids,))(ids), want)
