"""Comparing a lowered program's outputs with the reference's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from xdsl.ir import Operation

# Relative L2 error allowed per dtype: chunked or differently-ordered reductions change rounding.
TOLERANCE: dict[torch.dtype, float] = {
    torch.float64: 1e-10,
    torch.float32: 1e-5,
    torch.float16: 5e-3,
    torch.bfloat16: 2e-2,
}


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    diff = (out.double() - ref.double()).norm()
    scale = ref.double().norm()
    return float(diff / scale) if scale > 0 else float(diff)


def tolerance_for(dtypes: Iterable[torch.dtype]) -> float | None:
    """
    The tolerance of the least precise floating-point type a computation goes through: an f64
    output computed from f32 values carries f32 rounding. None when there is no float type.
    """
    floats = [TOLERANCE.get(d, 1e-5) for d in dtypes if d.is_floating_point]
    return max(floats) if floats else None


def mismatches(
    outputs: Sequence[torch.Tensor], reference: Sequence[torch.Tensor], tolerance: float | None = None
) -> list[str]:
    """
    One line per output that differs from the reference (empty when all match). Floats compare
    by relative L2 error against `tolerance`, or by default the output dtype's.
    """
    if len(outputs) != len(reference):
        return [f"{len(outputs)} outputs but the reference has {len(reference)}"]
    problems: list[str] = []
    for k, (out, ref) in enumerate(zip(outputs, reference)):
        if out.shape != ref.shape or out.dtype != ref.dtype:
            problems.append(f"output #{k}: {tuple(out.shape)} {out.dtype} vs reference {tuple(ref.shape)} {ref.dtype}")
            continue
        out, ref = out.cpu(), ref.cpu()
        if not out.dtype.is_floating_point:
            if not torch.equal(out, ref):
                problems.append(f"output #{k}: {(out != ref).sum().item()} of {out.numel()} elements differ")
            continue
        if torch.isnan(out).any() and not torch.isnan(ref).any():
            problems.append(f"output #{k}: NaN where the reference has none")
            continue
        error = relative_error(out, ref)
        limit = tolerance if tolerance is not None else TOLERANCE.get(out.dtype, 1e-5)
        if error > limit:
            problems.append(f"output #{k}: relative error {error:.3g} > {limit:g}")
    return problems


def computed_dtypes(function: Operation) -> set[torch.dtype]:
    """The torch dtypes of every tensor a (fusion-level) function computes with."""
    from xdsl.dialects.builtin import TensorType

    from hir.runtime.dtypes import shaped_dtype

    types = [arg.type for arg in function.regions[0].block.args]
    types += [r.type for op in function.walk() for r in op.results]
    return {shaped_dtype(t) for t in types if isinstance(t, TensorType)}
