"""
Comparing a lowered program's outputs with the reference's (`hir-run --check`, the tests).

Non-finite values match position for position: NaN where the reference has NaN, an infinity of the
same sign where it has one. Finite values compare with `torch.testing.assert_close`, at its
default tolerances for the dtype, except that the absolute tolerance grows with the output's
magnitude (see `Tolerance`). Integers and booleans compare exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from xdsl.ir import Operation


@dataclass(frozen=True)
class Tolerance:
    """
    Finite elements match when |out - ref| <= atol + rtol * max|ref| + rtol * |ref|.

    The `rtol * max|ref|` term is ours. A chunked or reordered reduction rounds each element with
    an absolute error of about eps * (the magnitude of the summed terms), so an element that
    cancels to nearly zero carries the rounding of its large terms. assert_close's plain
    defaults rejected such an element (|ref| ~ 0, error 1.5e-5, outputs up to 217) in 1 of 4992
    fuzzer programs that were right; with the term the largest error seen was 0.11 of the allowed
    one (`HIR_FUZZ_PROFILE=long`, `--hypothesis-seed=20261122`). Unlike a relative L2 error over
    the whole tensor, it still catches one wrong element of a large output.
    """

    rtol: float
    atol: float


# torch.testing.assert_close's documented defaults (rtol, atol); the table is private in torch.
DEFAULT_TOLERANCES: dict[torch.dtype, Tolerance] = {
    torch.float16: Tolerance(1e-3, 1e-5),
    torch.bfloat16: Tolerance(1.6e-2, 1e-5),
    torch.float32: Tolerance(1.3e-6, 1e-5),
    torch.float64: Tolerance(1e-7, 1e-7),
}
EXACT = Tolerance(0.0, 0.0)


def default_tolerance(dtype: torch.dtype) -> Tolerance:
    if not (dtype.is_floating_point or dtype.is_complex):
        return EXACT
    return DEFAULT_TOLERANCES.get(dtype, DEFAULT_TOLERANCES[torch.float16])


def tolerance_for(dtypes: Iterable[torch.dtype]) -> Tolerance | None:
    """
    The tolerance of the least precise floating-point type a computation goes through: an f64
    output computed from f32 values carries f32 rounding. None when there is no float type.
    """
    floats = [default_tolerance(d) for d in dtypes if d.is_floating_point or d.is_complex]
    if not floats:
        return None
    return Tolerance(max(t.rtol for t in floats), max(t.atol for t in floats))


def mismatches(
    outputs: Sequence[torch.Tensor], reference: Sequence[torch.Tensor], tolerance: Tolerance | None = None
) -> list[str]:
    """
    One line per output that differs from the reference (empty when all match). Floats compare
    at `tolerance`, by default the output dtype's; integers and booleans exactly.
    """
    if len(outputs) != len(reference):
        return [f"{len(outputs)} outputs but the reference has {len(reference)}"]
    problems: list[str] = []
    for k, (out, ref) in enumerate(zip(outputs, reference)):
        if out.shape != ref.shape or out.dtype != ref.dtype:
            problems.append(f"output #{k}: {tuple(out.shape)} {out.dtype} vs reference {tuple(ref.shape)} {ref.dtype}")
            continue
        problem = _difference(out.cpu(), ref.cpu(), tolerance or default_tolerance(out.dtype))
        if problem:
            problems.append(f"output #{k}: {problem}")
    return problems


def _difference(out: torch.Tensor, ref: torch.Tensor, tolerance: Tolerance) -> str | None:
    """What differs between two tensors of one shape and dtype, or None."""
    if not (out.dtype.is_floating_point or out.dtype.is_complex):
        return _assert_close(out, ref, EXACT)
    non_finite = ~torch.isfinite(out) | ~torch.isfinite(ref)
    same = (out == ref) | (torch.isnan(out) & torch.isnan(ref))  # infinities of one sign are equal
    wrong = non_finite & ~same
    if wrong.any():
        index = tuple(torch.nonzero(wrong)[0].tolist())
        return (
            f"{int(wrong.sum())} of {out.numel()} elements differ in NaN/Inf, first at index {index}: "
            f"{out[index].item()} where the reference has {ref[index].item()}"
        )
    finite_ref = torch.where(non_finite, 0, ref)
    scale = finite_ref.abs().max().item() if ref.numel() else 0.0
    atol = tolerance.atol + tolerance.rtol * scale
    return _assert_close(torch.where(non_finite, 0, out), finite_ref, Tolerance(tolerance.rtol, atol))


def _assert_close(out: torch.Tensor, ref: torch.Tensor, tolerance: Tolerance) -> str | None:
    """assert_close's report (mismatched elements, greatest differences and where), on one line."""
    try:
        torch.testing.assert_close(out, ref, rtol=tolerance.rtol, atol=tolerance.atol)
    except AssertionError as err:
        lines = [line.strip() for line in str(err).splitlines()[1:] if line.strip()]
        return "; ".join(lines)
    return None


def computed_dtypes(function: Operation) -> set[torch.dtype]:
    """The torch dtypes of every tensor a (fusion-level) function computes with."""
    from xdsl.dialects.builtin import TensorType

    from hir.runtime.dtypes import shaped_dtype

    types = [arg.type for arg in function.regions[0].block.args]
    types += [r.type for op in function.walk() for r in op.results]
    return {shaped_dtype(t) for t in types if isinstance(t, TensorType)}
