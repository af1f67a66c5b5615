"""Comparing a lowered program's outputs with the reference's."""

from __future__ import annotations

from collections.abc import Sequence

import torch

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


def mismatches(outputs: Sequence[torch.Tensor], reference: Sequence[torch.Tensor]) -> list[str]:
    """One line per output that differs from the reference (empty when all match)."""
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
        if error > TOLERANCE.get(out.dtype, 1e-5):
            problems.append(f"output #{k}: relative error {error:.3g} > {TOLERANCE.get(out.dtype, 1e-5):g}")
    return problems
