"""
Special functions fusion has no op for, spelled with its elementwise ops (`exp`, `log`, `log1p`,
`sin`, `cos`, `erf`, `floor`, `round`, compares and `where`), each accurate to a few units in the
last place of f32 (f64: about 1e-14 relative):

- `atan2(y, x)` (and `atan`): the angle of `min(|x|, |y|) / max(|x|, |y|)` in [0, 1] from a
  polynomial guess and Newton steps on `tan`, unfolded to its octant and quadrant by the signs
  (a signed zero's too: `1 / -0.0 < 0`);
- `erfc`: `1 - erf(x)` where that does not cancel (|x| < 1), else Cephes' rational
  approximations times `exp(-x^2)`, the square split so that its rounding does not grow;
- `erfinv`: Giles' single-precision approximation, then Newton steps on `erf` (on `erfc` near
  +-1, where `1 - |y|` is exact);
- `lgamma`: the Taylor series of `lgamma(2 + t)` (zeta values) for `x` in (-0.5, 3.5), which
  keeps the zeros at 1 and 2 accurate, Stirling's series above (f64: after shifting to 10),
  reflection below;
- `digamma` and `polygamma(1, x)`: torch's own recurrences and asymptotic series; `polygamma(n,
  x)` for n >= 2 `(-1)^(n+1) n! zeta(n + 1, x)`, the Hurwitz zeta as Cephes' (the terms below 10
  summed, Euler-Maclaurin's tail), with reflection (the n-th derivative of `cot`) for x <= 0;
- `asinh`, `acosh`, `atanh`: by `log1p` (exact near 0 and 1), `log(2x)` for huge arguments;
- `copysign` (the sign of a signed zero from `1 / b`) and `ldexp` (`x * 2^n`).

The loops of the scalar algorithms (shift until x >= 10) run a fixed number of times, each step
masked by `where`. bf16 and f16 are computed in f32, as torch's kernels do, and rounded once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import cache

import torch
from torch.fx import Node
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType
from xdsl.ir import Attribute, SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten, out_element
from hir.frontend.emitter import Emitter, element_of, shape_of

I1 = IntegerType(1)
Number = int | float


def _number(value: Number, element: Attribute) -> Number:
    """`value` as `element` holds it: a bool for i1, an int for integers, a float for floats."""
    if element == I1:
        return bool(value)
    return int(value) if isinstance(element, IntegerType) else float(value)


class Num:
    """A fusion value with Python's operators, each one fusion op (numbers become 0-d constants of its type)."""

    def __init__(self, e: Emitter, value: SSAValue) -> None:
        self.e, self.value = e, value

    @property
    def element(self) -> Attribute:
        return element_of(self.value)

    @property
    def f64(self) -> bool:
        return self.element == Float64Type()

    def _of(self, other: Num | Number) -> SSAValue | Number:
        return other.value if isinstance(other, Num) else _number(other, self.element)

    def _binary(self, kind: type[fusion.BinaryFusionOp], a: SSAValue | Number, b: SSAValue | Number) -> Num:
        return Num(self.e, self.e.binary(kind, a, b, self.element))

    def __add__(self, other: Num | Number) -> Num:
        return self._binary(fusion.AddOp, self.value, self._of(other))

    def __radd__(self, other: Number) -> Num:
        return self._binary(fusion.AddOp, self._of(other), self.value)

    def __sub__(self, other: Num | Number) -> Num:
        return self._binary(fusion.SubOp, self.value, self._of(other))

    def __rsub__(self, other: Number) -> Num:
        return self._binary(fusion.SubOp, self._of(other), self.value)

    def __mul__(self, other: Num | Number) -> Num:
        return self._binary(fusion.MulOp, self.value, self._of(other))

    def __rmul__(self, other: Number) -> Num:
        return self._binary(fusion.MulOp, self._of(other), self.value)

    def __truediv__(self, other: Num | Number) -> Num:
        return self._binary(fusion.DivOp, self.value, self._of(other))

    def __rtruediv__(self, other: Number) -> Num:
        return self._binary(fusion.DivOp, self._of(other), self.value)

    def __pow__(self, other: Num | Number) -> Num:
        return self._binary(fusion.PowOp, self.value, self._of(other))

    def __rpow__(self, other: Number) -> Num:
        return self._binary(fusion.PowOp, self._of(other), self.value)

    def __neg__(self) -> Num:
        return self.apply(fusion.NegOp)

    def apply(self, kind: type[fusion.UnaryFusionOp]) -> Num:
        return Num(self.e, self.e.unary(kind, self.value))

    def full(self, value: Number) -> Num:
        """`value` in every element of this value's shape (`x * 0` would be NaN at inf)."""
        return Num(self.e, self.e.broadcast_to(self.e.constant(value, self.element), shape_of(self.value)))

    def compare(self, predicate: str, other: Num | Number) -> Num:
        a = self.value
        b = other.value if isinstance(other, Num) else self.e.constant(_number(other, self.element), self.element)
        a, b = self.e.broadcast_pair(a, b)
        return Num(self.e, self.e.typed(lambda t: fusion.CompareOp(predicate, a, b, t), [a, b], shape_of(a), I1))

    def __lt__(self, other: Num | Number) -> Num:
        return self.compare("lt", other)

    def __le__(self, other: Num | Number) -> Num:
        return self.compare("le", other)

    def __gt__(self, other: Num | Number) -> Num:
        return self.compare("gt", other)

    def __ge__(self, other: Num | Number) -> Num:
        return self.compare("ge", other)

    def eq(self, other: Num | Number) -> Num:
        return self.compare("eq", other)

    def __and__(self, other: Num) -> Num:
        return where(self, other, False)

    def __or__(self, other: Num) -> Num:
        return where(self, True, other)

    def __invert__(self) -> Num:
        return self.compare("eq", False)


def where(condition: Num, a: Num | Number | bool, b: Num | Number | bool, element: Attribute | None = None) -> Num:
    """`torch.where(condition, a, b)`; a number takes the other operand's type, or `element` (default i1)."""
    e = condition.e
    like = a if isinstance(a, Num) else b if isinstance(b, Num) else None
    element = like.element if like is not None else element or I1
    a_value, b_value = (v.value if isinstance(v, Num) else e.constant(_number(v, element), element) for v in (a, b))
    shape = tuple(torch.broadcast_shapes(*(shape_of(v) for v in (condition.value, a_value, b_value))))
    c, a_value, b_value = (e.broadcast_to(v, shape) for v in (condition.value, a_value, b_value))
    return Num(e, e.typed(lambda t: fusion.WhereOp(c, a_value, b_value, t), [c, a_value, b_value], shape, element))


def minimum(a: Num, b: Num | Number) -> Num:
    return a._binary(fusion.MinimumOp, a.value, a._of(b))


def maximum(a: Num, b: Num | Number) -> Num:
    return a._binary(fusion.MaximumOp, a.value, a._of(b))


def horner(x: Num, coefficients: Sequence[float]) -> Num:
    """`c[0] x^n + ... + c[n]` (Cephes' `polevl` order, highest power first)."""
    result = x * coefficients[0] + coefficients[1]
    for c in coefficients[2:]:
        result = result * x + c
    return result


def signbit(x: Num) -> Num:
    """Whether x's sign bit is set, -0.0 included (`1 / -0.0` is -inf); false for NaN."""
    return (x < 0) | (1 / x < 0)


def _elementwise(fn: Callable[..., Num]) -> Builder:
    """
    A builder of `fn` on the tensor operands cast (and broadcast) to the result's float type, or
    f32 for bf16 and f16 (as torch's kernels compute them), rounded back once.
    """

    def build(e: Emitter, node: Node, *args: SSAValue | Number) -> SSAValue:
        element = out_element(node)
        wide = Float32Type() if element in (BFloat16Type(), Float16Type()) else element
        tensors = [e.cast(a, wide) for a in args if isinstance(a, SSAValue)]
        if len(tensors) == 2:
            tensors = list(e.broadcast_pair(*tensors))
        operands = iter(tensors)
        values = [Num(e, next(operands)) if isinstance(a, SSAValue) else a for a in args]
        return e.cast(fn(*values).value, element)

    return build


# -- atan2 ------------------------------------------------------------------------------------------


def _atan_unit(t: Num) -> Num:
    """atan(t) for t in [0, 1]: a guess within 1.5e-3, then Newton on `tan(a) = t` (error squared per step)."""
    a = t * (math.pi / 4) + t * (1 - t) * (t * 0.0663 + 0.2447)
    for _ in range(3 if t.f64 else 2):
        c = a.apply(fusion.CosOp)
        a = a - c * (a.apply(fusion.SinOp) - t * c)
    return a


def atan2(y: Num, x: Num) -> Num:
    """The angle of (x, y): atan of the smaller over the larger magnitude, unfolded by octant and signs."""
    ax, ay = x.apply(fusion.AbsOp), y.apply(fusion.AbsOp)
    big, small = maximum(ax, ay), minimum(ax, ay)
    t = where(big.eq(0), 0.0, where(small.eq(math.inf), 1.0, small / big))  # (0, 0): 0; (inf, inf): 1
    angle = _atan_unit(t)
    angle = where(ay > ax, math.pi / 2 - angle, angle)
    angle = where(signbit(x), math.pi - angle, angle)
    return where(signbit(y), -angle, angle)


def _atan(x: Num) -> Num:
    return atan2(x, x.full(1))


def _asin(x: Num) -> Num:
    """`atan2(x, sqrt((1 - x)(1 + x)))` (the cosine's square without cancellation near +-1); NaN beyond +-1."""
    return atan2(x, ((1.0 - x) * (x + 1.0)).apply(fusion.SqrtOp))


def _acos(x: Num) -> Num:
    """`atan2(sqrt((1 - x)(1 + x)), x)`; NaN beyond +-1."""
    return atan2(((1.0 - x) * (x + 1.0)).apply(fusion.SqrtOp), x)


# -- inverse hyperbolic functions -------------------------------------------------------------------

_HUGE = 2.0**28  # above it asinh(x) and acosh(x) are log(2x) to the last place (1 / (4 x^2) is below f64's eps)


def _asinh(x: Num) -> Num:
    """`sign(x) log1p(a + a^2 / (1 + sqrt(1 + a^2)))` of a = |x| (exact near 0), `log(a) + log 2` for huge a."""
    a = x.apply(fusion.AbsOp)
    small = (a + a * a / ((a * a + 1.0).apply(fusion.SqrtOp) + 1.0)).apply(fusion.Log1pOp)
    r = where(a > _HUGE, a.apply(fusion.LogOp) + math.log(2.0), small)
    return where(signbit(x), -r, r)  # -0.0 stays -0.0; NaN stays NaN


def _acosh(x: Num) -> Num:
    """`log1p(t + sqrt(t (t + 2)))` of t = x - 1 (exact near 1), `log(x) + log 2` for huge x; NaN below 1."""
    t = x - 1.0
    r = (t + (t * (t + 2.0)).apply(fusion.SqrtOp)).apply(fusion.Log1pOp)
    r = where(x > _HUGE, x.apply(fusion.LogOp) + math.log(2.0), r)
    return where(x < 1.0, math.nan, r)


def _atanh(x: Num) -> Num:
    """`(log1p(x) - log1p(-x)) / 2` (NaN beyond +-1, +-inf at it; a signed zero kept)."""
    r = (x.apply(fusion.Log1pOp) - (-x).apply(fusion.Log1pOp)) * 0.5
    return where(x.eq(0), x, r)


# -- erfc, erfinv -----------------------------------------------------------------------------------

# Cephes ndtr.c: erfc(x) = exp(-x^2) P(x) / Q(x) on [1, 8), R(x) / S(x) above (Q and S monic).
_ERFC_P = (
    2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0, 4.86371970985681366614e1,
    1.96520832956077098242e2, 5.26445194995477358631e2, 9.34528527171957607540e2, 1.02755188689515710272e3,
    5.57535335369399327526e2,
)  # fmt: skip
_ERFC_Q = (
    1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2, 9.75708501743205489753e2,
    1.82390916687909736289e3, 2.24633760818710981792e3, 1.65666309194161350182e3, 5.57535340817727675546e2,
)  # fmt: skip
_ERFC_R = (
    5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0, 6.16021097993053585195e0,
    7.40974269950448939160e0, 2.97886665372100240670e0,
)  # fmt: skip
_ERFC_S = (
    1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1, 1.70814450747565897222e1,
    9.60896809063285878198e0, 3.36907645100081516050e0,
)  # fmt: skip


def erfc(x: Num) -> Num:
    a = minimum(x.apply(fusion.AbsOp), 30.0)  # erfc(30) is 0 in f64: no inf - inf below
    # exp(-a^2) as exp(-m^2) exp(-(2 m f + f^2)), m = a to 1/128 (m^2 exact): a^2's rounding is not magnified
    m = (a * 128).apply(fusion.RoundOp) / 128
    f = a - m
    gauss = (-(m * m)).apply(fusion.ExpOp) * (-(m * f * 2 + f * f)).apply(fusion.ExpOp)
    ratio = where(a < 8, horner(a, _ERFC_P) / horner(a, _ERFC_Q), horner(a, _ERFC_R) / horner(a, _ERFC_S))
    tail = gauss * ratio
    tail = where(x < 0, 2 - tail, tail)
    return where(a < 1, 1 - x.apply(fusion.ErfOp), tail)


# Giles, "Approximating the erfinv function" (2012), single precision: erfinv(y) = y p(w), w = -log(1 - y^2)
_GILES_CENTRAL = (
    2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
    -0.00417768164, 0.246640727, 1.50140941,
)  # fmt: skip
_GILES_TAIL = (
    -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
    1.00167406, 2.83297682,
)  # fmt: skip


def erfinv(y: Num) -> Num:
    """
    Giles' guess, then Newton steps on `erf(x) = |y|`, written as `erfc(x) = 1 - |y|` (exact) for
    |y| >= 0.5, so that the step keeps its relative accuracy as |y| nears 1.
    """
    a = y.apply(fusion.AbsOp)
    gap = 1 - a
    w = -(gap * (1 + a)).apply(fusion.LogOp)
    x = where(w < 5, horner(w - 2.5, _GILES_CENTRAL), horner(w.apply(fusion.SqrtOp) - 3, _GILES_TAIL)) * a
    for _ in range(2 if y.f64 else 1):
        residual = where(a < 0.5, x.apply(fusion.ErfOp) - a, gap - erfc(x))
        x = x - residual / ((-(x * x)).apply(fusion.ExpOp) * (2 / math.sqrt(math.pi)))
    x = where(a > 1, math.nan, where(gap.eq(0), math.inf, x))
    return where(signbit(y), -x, x)


# -- lgamma -----------------------------------------------------------------------------------------


_BERNOULLI = tuple(
    Fraction(n, d)
    for n, d in ((1, 6), (-1, 30), (1, 42), (-1, 30), (5, 66), (-691, 2730), (7, 6), (-3617, 510), (43867, 798))
)  # B_2, B_4, ..., B_18


def _zeta_minus_one(k: int) -> float:
    """
    zeta(k) - 1 for k >= 2: the terms below 10, then Euler-Maclaurin's tail (in Python: a builder
    may run under fake tensors, which have no values).
    """
    terms = [n ** -float(k) for n in range(2, 10)] + [10.0 ** (1 - k) / (k - 1), 10.0**-k / 2]
    rising = k  # k (k + 1) ... (k + 2j - 2)
    for j, b in enumerate(_BERNOULLI, 1):
        if j > 1:
            rising *= (k + 2 * j - 3) * (k + 2 * j - 2)
        terms.append(float(b / math.factorial(2 * j)) * rising * 10.0 ** (-k - 2 * j + 1))
    return math.fsum(terms)


@cache
def _lgamma_series(terms: int) -> tuple[float, ...]:
    """The Taylor coefficients of lgamma(2 + t), highest power first: `(-1)^k (zeta(k) - 1) / k`, then `1 - gamma`."""
    coefficients = [(-1) ** k * _zeta_minus_one(k) / k for k in range(2, terms + 1)]
    return (*reversed(coefficients), 1 - 0.57721566490153286061, 0.0)


def _stirling(z: Num, terms: int) -> Num:
    """lgamma(z) by Stirling's series `(z - 1/2) log z - z + log(2 pi) / 2 + sum B_2k / (2k (2k - 1) z^(2k - 1))`."""
    inverse = 1 / z
    coefficients = [float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(_BERNOULLI[:terms], 1)]
    series = horner(inverse * inverse, coefficients[::-1]) * inverse
    # (z - 1/2)(log z - 1) - 1/2 is (z - 1/2) log z - z without its two large terms
    return (z - 0.5) * (z.apply(fusion.LogOp) - 1) + (0.5 * math.log(2 * math.pi) - 0.5) + series


def _lgamma_positive(x: Num) -> Num:
    """lgamma(x) for x > -0.5 (NaN-free where x is finite)."""
    # (-0.5, 3.5): lgamma(2 + t) by its series at t = x - k, k the nearest of 0..3 (exact), then the recurrence
    k = minimum(maximum((x + 0.5).apply(fusion.FloorOp), 0), 3)
    t = x - k
    near = horner(t, _lgamma_series(28 if x.f64 else 12))
    below = near - t.apply(fusion.Log1pOp)  # lgamma(1 + t)
    near = where(k.eq(0), below - x.apply(fusion.AbsOp).apply(fusion.LogOp), where(k.eq(1), below, near))
    near = where(k.eq(3), near + (x - 1).apply(fusion.LogOp), near)
    # above: Stirling's series, in f32 from 3.5 on, in f64 after shifting to 10 (lgamma(x) = lgamma(x + n)
    # - log(x (x + 1) ... (x + n - 1)), whose terms it needs fewer of there)
    z, product = x, x.full(1)
    if x.f64:
        for _ in range(7):
            low = z < 10
            product, z = where(low, product * z, product), where(low, z + 1, z)
    far = _stirling(z, 9 if x.f64 else 7)
    if x.f64:
        far = far - product.apply(fusion.LogOp)
    return where(x < 3.5, near, far)


def lgamma(x: Num) -> Num:
    """
    lgamma; below -0.5 by reflection, `log(pi / |x sin(pi x)|) - lgamma(-x)` (`-x` is exact, where
    `lgamma(1 - x)` would read a rounded `1 - x`), inf at the poles.
    """
    negative = x <= -0.5
    value = _lgamma_positive(where(negative, -x, x))
    fraction = x - x.apply(fusion.RoundOp)  # sin(pi x) = +-sin(pi r), r in [-0.5, 0.5] exact
    sine = (fraction * math.pi).apply(fusion.SinOp).apply(fusion.AbsOp)
    reflected = (math.pi / (sine * -x)).apply(fusion.LogOp) - value  # one log, one rounding
    return where(x.apply(fusion.AbsOp).eq(math.inf), math.inf, where(negative, reflected, value))


# -- digamma, polygamma -----------------------------------------------------------------------------

_PSI_10 = 2.25175258906672110764
_DIGAMMA_A = (
    8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3, -4.16666666666666666667e-3,
    3.96825396825396825397e-3, -8.33333333333333333333e-3, 8.33333333333333333333e-2,
)  # fmt: skip


def _cot(r: Num) -> Num:
    """
    `cot(pi r)` for r in [-0.5, 0.5], its cosine as `sin(pi (0.5 - |r|))` (exact argument), which
    stays accurate where it nears 0 (r near +-0.5).
    """
    cosine = ((0.5 - r.apply(fusion.AbsOp)) * math.pi).apply(fusion.SinOp)
    return cosine / (r * math.pi).apply(fusion.SinOp)


def digamma(x: Num) -> Num:
    """torch's `calc_digamma`: `digamma(1 - x) - pi / tan(pi r)` for x < 0, shifts to x >= 10, the asymptotic series."""
    negative = x < 0
    w = where(negative, 1 - x, x)
    total = x.full(0)
    for _ in range(10):
        low = w < 10
        total = where(low, total - 1 / w, total)
        w = where(low, w + 1, w)
    z = 1 / (w * w)
    series = z * horner(z, _DIGAMMA_A)
    value = where(w.eq(10), total + _PSI_10, total + w.apply(fusion.LogOp) - 0.5 / w - series)
    value = where(negative, value - _cot(x - x.apply(fusion.RoundOp)) * math.pi, value)  # period 1: r in [-0.5, 0.5]
    whole = x.eq(x.apply(fusion.TruncOp))
    value = where(negative & whole, math.nan, value)  # the poles; at 0, -inf (and +inf at -0.0)
    return where(x.eq(0), where(signbit(x), math.inf, -math.inf, x.element), value)


def trigamma(x: Num) -> Num:
    """torch's `trigamma`: reflection below 0.5, six shifts, the asymptotic series."""
    low = x < 0.5
    pi = float(torch.tensor(math.pi, dtype=torch.float64 if x.f64 else torch.float32))
    sine = (x * pi).apply(fusion.SinOp)
    total = where(low, -(pi * pi) / (sine * sine), x.full(0))
    w = where(low, 1 - x, x)
    for _ in range(6):
        total = total + 1 / (w * w)
        w = w + 1
    ixx = 1 / (w * w)
    total = total + (1 + 1 / (w * 2) + ixx * (1 / 6 - ixx * (1 / 30 - ixx * (1 / 42)))) / w
    return where(low, -total, total)


# (2k)! / B_2k, Cephes' zeta.c
_ZETA_A = (
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
    -7.1661652561756670113e18,
)  # fmt: skip


def _hurwitz_zeta(s: int, q: Num) -> Num:
    """`sum_k (q + k)^-s` for q > 0: the terms below 10 summed, then Euler-Maclaurin's tail at w >= 10 (Cephes)."""
    total, w = q.full(0), q
    for _ in range(10):
        low = w < 10
        total = where(low, total + w ** float(-s), total)
        w = where(low, w + 1, w)
    b = w ** float(-s)
    total = total + b * w / (s - 1) + b * 0.5
    rising = 1.0
    for j, a in enumerate(_ZETA_A):
        rising *= s + 2 * j
        b = b / w
        total = total + b * (rising / a)
        rising *= s + 2 * j + 1
        b = b / w
    return total


@cache
def _cot_derivative(n: int) -> tuple[float, ...]:
    """P_n with `d^n/du^n cot(u) = P_n(cot u)`, highest power first: P_0(c) = c, P_k+1 = -(1 + c^2) P_k'."""
    p = [0, 1]  # by power
    for _ in range(n):
        derivative = [k * p[k] for k in range(1, len(p))] + [0, 0]
        p = [-(derivative[k] + (derivative[k - 2] if k >= 2 else 0)) for k in range(len(derivative))]
    while len(p) > 1 and p[-1] == 0:
        p.pop()
    return tuple(float(c) for c in reversed(p))


def polygamma(n: int, x: Num) -> Num:
    """
    `polygamma(n, x)`: digamma, trigamma, or `(-1)^(n+1) n! zeta(n + 1, x)`; for x <= 0 by
    reflection, `(-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi x))`, infinite at the poles (as torch).
    """
    if n == 0:
        return digamma(x)
    if n == 1:
        return trigamma(x)
    positive = x > 0
    value = _hurwitz_zeta(n + 1, where(positive, x, 1 - x)) * ((-1) ** (n + 1) * float(math.factorial(n)))
    cot = _cot(x - x.apply(fusion.RoundOp))
    reflected = value * (-1) ** n - horner(cot, _cot_derivative(n)) * math.pi ** (n + 1)
    value = where(positive, value, reflected)
    pole = (x <= 0) & x.eq(x.apply(fusion.FloorOp))
    return where(pole, math.inf if n % 2 else -math.inf, value)


def _polygamma(e: Emitter, node: Node, n: int, x: SSAValue) -> SSAValue:
    if not isinstance(n, int) or n < 0:
        raise e.error(f"{node.target}: n must be a non-negative integer, got {n!r}")
    return _elementwise(lambda v: polygamma(n, v))(e, node, x)


# -- copysign, ldexp --------------------------------------------------------------------------------


def copysign(a: Num, b: Num | Number) -> Num:
    size = a.apply(fusion.AbsOp)
    if isinstance(b, Num):
        return where(signbit(b), -size, size)
    return -size if math.copysign(1.0, b) < 0 else size


def _ldexp(e: Emitter, node: Node, x: SSAValue, exponent: SSAValue) -> SSAValue:
    """`x * 2^n`, as torch's `ldexp` (`pow` of 2 is exact for whole n)."""
    element = out_element(node)
    return e.binary(
        fusion.MulOp, e.cast(x, element), e.binary(fusion.PowOp, 2.0, e.cast(exponent, element), element), element
    )


def fmax(a: Num, b: Num) -> Num:
    """`torch.fmax`: the maximum, ignoring a NaN operand (NaN where both are)."""
    return where(a.compare("ne", a), b, where(b.compare("ne", b), a, maximum(a, b)))


def fmin(a: Num, b: Num) -> Num:
    """`torch.fmin`: the minimum, ignoring a NaN operand (NaN where both are)."""
    return where(a.compare("ne", a), b, where(b.compare("ne", b), a, minimum(a, b)))


def _signbit(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    """`torch.signbit`: set for negative numbers and -0.0 (integers: below zero). A NaN's sign bit
    is not read (fusion has no bit view): false, where torch reads the bit of the NaN at hand."""
    element = element_of(x)
    if isinstance(element, IntegerType):
        return e.cast((Num(e, x) < 0).value, out_element(node))
    wide = Float32Type() if element in (BFloat16Type(), Float16Type()) else element
    return e.cast(signbit(Num(e, e.cast(x, wide))).value, out_element(node))


SPECIAL_TABLE: dict[object, Builder] = {
    aten.signbit.default: _signbit,
    aten.fmax.default: _elementwise(fmax),
    aten.fmin.default: _elementwise(fmin),
    aten.atan.default: _elementwise(_atan),
    aten.asin.default: _elementwise(_asin),
    aten.acos.default: _elementwise(_acos),
    aten.asinh.default: _elementwise(_asinh),
    aten.acosh.default: _elementwise(_acosh),
    aten.atanh.default: _elementwise(_atanh),
    aten.atan2.default: _elementwise(atan2),
    aten.erfc.default: _elementwise(erfc),
    aten.erfinv.default: _elementwise(erfinv),
    aten.lgamma.default: _elementwise(lgamma),
    aten.digamma.default: _elementwise(digamma),
    aten.polygamma.default: _polygamma,
    aten.copysign.Tensor: _elementwise(copysign),
    aten.copysign.Scalar: _elementwise(copysign),
    aten.ldexp.Tensor: _ldexp,
}
