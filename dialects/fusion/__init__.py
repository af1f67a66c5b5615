"""
The fusion dialect: tensor programs with value semantics whose parallelization lives in the tensor
types' `#fusion.parallel` encoding (`parallel_encoding`). `ops`: the computing ops; `segment`:
`fusion.segment` and its `fusion.yield`. This package re-exports them (`fusion.AddOp`).
"""

from xdsl.ir import Dialect

from hir.dialects.fusion.ops import (
    AbsOp,
    AddOp,
    BinaryFusionOp,
    CastOp,
    DivOp,
    ExpandOp,
    ExpOp,
    FloatUnaryFusionOp,
    FusionOp,
    LinearOp,
    MatmulOp,
    MaximumOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    PermuteOp,
    ReductionFusionOp,
    ReluOp,
    SetOp,
    SubOp,
    SumOp,
    TanhOp,
    UnaryFusionOp,
    element_type_of,
    shape_of,
)
from hir.dialects.fusion.segment import SegmentOp, YieldOp, verify_fusion_region
from hir.dialects.parallel_encoding import ParallelAttr

FUSION_OPS: tuple[type[FusionOp], ...] = (
    SetOp,
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaximumOp,
    NegOp,
    AbsOp,
    ExpOp,
    ReluOp,
    TanhOp,
    CastOp,
    ExpandOp,
    PermuteOp,
    SumOp,
    MaxOp,
    MinOp,
    MatmulOp,
    LinearOp,
)

Fusion = Dialect("fusion", [*FUSION_OPS, SegmentOp, YieldOp], [ParallelAttr])

__all__ = [
    "FUSION_OPS",
    "AbsOp",
    "AddOp",
    "BinaryFusionOp",
    "CastOp",
    "DivOp",
    "ExpOp",
    "ExpandOp",
    "FloatUnaryFusionOp",
    "Fusion",
    "FusionOp",
    "LinearOp",
    "MatmulOp",
    "MaxOp",
    "MaximumOp",
    "MinOp",
    "MulOp",
    "NegOp",
    "PermuteOp",
    "ReductionFusionOp",
    "ReluOp",
    "SegmentOp",
    "SetOp",
    "SubOp",
    "SumOp",
    "TanhOp",
    "UnaryFusionOp",
    "YieldOp",
    "element_type_of",
    "shape_of",
    "verify_fusion_region",
]
