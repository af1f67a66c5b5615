"""
The fusion dialect: tensor programs with value semantics whose parallelization lives in the tensor
types' `#fusion.parallel` encoding (`parallel_encoding`). `ops`: the base classes every fusion op
derives from; the ops by kind: `elementwise`, `constants`, `shape`, `reductions`,
`normalization`, `contractions`, `attention`; `segment`: `fusion.segment` and its `fusion.yield`. This package
re-exports them (`fusion.AddOp`).
"""

from xdsl.ir import Dialect

from hir.dialects.definition_check import specialize_verification
from hir.dialects.fusion.attention import ScaledDotProductAttentionOp
from hir.dialects.fusion.constants import FullOp
from hir.dialects.fusion.contractions import LinearOp, MatmulOp
from hir.dialects.fusion.elementwise import (
    AbsOp,
    AddOp,
    CastOp,
    CompareOp,
    CosOp,
    DivOp,
    ErfOp,
    ExpOp,
    GeluOp,
    LogOp,
    MaximumOp,
    MulOp,
    NegOp,
    PowOp,
    ReciprocalOp,
    ReluOp,
    RsqrtOp,
    SetOp,
    SigmoidOp,
    SiluOp,
    SinOp,
    SqrtOp,
    SubOp,
    TanhOp,
    WhereOp,
)
from hir.dialects.fusion.normalization import LayerNormOp, NormFusionOp, RmsNormOp, SoftmaxOp
from hir.dialects.fusion.ops import (
    AxesFusionOp,
    BinaryFusionOp,
    FloatUnaryFusionOp,
    FusionOp,
    UnaryFusionOp,
    element_type_of,
    shape_of,
)
from hir.dialects.fusion.reductions import MaxOp, MeanOp, MinOp, ReductionFusionOp, SumOp
from hir.dialects.fusion.segment import SegmentOp, YieldOp, verify_fusion_region
from hir.dialects.fusion.shape import ConcatOp, ExpandOp, PermuteOp, ReshapeOp, SliceOp
from hir.dialects.named_access import specialize_accessors
from hir.dialects.parallel_encoding import ParallelAttr

FUSION_OPS: tuple[type[FusionOp], ...] = (
    SetOp,
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaximumOp,
    PowOp,
    CompareOp,
    WhereOp,
    NegOp,
    AbsOp,
    ExpOp,
    LogOp,
    SinOp,
    CosOp,
    ErfOp,
    ReluOp,
    TanhOp,
    SigmoidOp,
    SiluOp,
    GeluOp,
    SqrtOp,
    RsqrtOp,
    ReciprocalOp,
    CastOp,
    FullOp,
    ExpandOp,
    PermuteOp,
    ReshapeOp,
    SliceOp,
    ConcatOp,
    SumOp,
    MaxOp,
    MinOp,
    MeanOp,
    SoftmaxOp,
    LayerNormOp,
    RmsNormOp,
    MatmulOp,
    LinearOp,
    ScaledDotProductAttentionOp,
)

Fusion = Dialect("fusion", [*FUSION_OPS, SegmentOp, YieldOp], [ParallelAttr])
specialize_verification(Fusion)
specialize_accessors(Fusion)

__all__ = [
    "FUSION_OPS",
    "AbsOp",
    "AddOp",
    "AxesFusionOp",
    "BinaryFusionOp",
    "CastOp",
    "CompareOp",
    "ConcatOp",
    "CosOp",
    "DivOp",
    "ErfOp",
    "ExpOp",
    "ExpandOp",
    "FloatUnaryFusionOp",
    "FullOp",
    "Fusion",
    "FusionOp",
    "GeluOp",
    "LayerNormOp",
    "LinearOp",
    "LogOp",
    "MatmulOp",
    "MaxOp",
    "MaximumOp",
    "MeanOp",
    "MinOp",
    "MulOp",
    "NegOp",
    "NormFusionOp",
    "PermuteOp",
    "PowOp",
    "ReciprocalOp",
    "ReductionFusionOp",
    "ReluOp",
    "ReshapeOp",
    "RmsNormOp",
    "RsqrtOp",
    "ScaledDotProductAttentionOp",
    "SegmentOp",
    "SetOp",
    "SigmoidOp",
    "SiluOp",
    "SinOp",
    "SliceOp",
    "SoftmaxOp",
    "SqrtOp",
    "SubOp",
    "SumOp",
    "TanhOp",
    "UnaryFusionOp",
    "WhereOp",
    "YieldOp",
    "element_type_of",
    "shape_of",
    "verify_fusion_region",
]
