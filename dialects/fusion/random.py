"""
`fusion.random`: a tensor of independent random numbers, drawn from the run's generator (torch's,
so `torch.manual_seed` seeds it) each time the op runs; the frontend builds dropout's mask, `rand`,
`randn`, `bernoulli` and `randint` from it.

It is the one fusion op with effects: it reads and advances the generator's state, so `cse`
keeps two draws of one shape apart (two dropouts get two masks) and no pass moves it across
another draw or out of a loop that draws once per iteration. Its `DrawsFromGenerator` trait
declares them beside the `Pure` that every fusion op inherits from `FusionOp` (xDSL merges a
class's traits with its bases'): ask xDSL's effect queries (`is_side_effect_free`,
`get_effects`), as cse and dce do, never `has_trait(Pure)`, which is true here too.
"""

from __future__ import annotations

from collections.abc import Set

from xdsl.dialects.builtin import DYNAMIC_INDEX, AnyFloat, StringAttr, TensorType
from xdsl.ir import Attribute, Operation
from xdsl.irdl import irdl_op_definition, prop_def, result_def, traits_def
from xdsl.traits import EffectInstance, MemoryEffect, MemoryEffectKind
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.ops import FusionOp, element_type_of, shape_of

DISTRIBUTIONS = ("uniform", "normal")
"""`uniform`: in [0, 1) (`torch.rand`); `normal`: mean 0, standard deviation 1 (`torch.randn`)."""


class DrawsFromGenerator(MemoryEffect):
    """Reads and writes the generator's state (no value of the IR): never merged, dropped or reordered."""

    @classmethod
    def get_effects(cls, op: Operation) -> Set[EffectInstance]:
        return {EffectInstance(MemoryEffectKind.READ), EffectInstance(MemoryEffectKind.WRITE)}


@irdl_op_definition
class RandomOp(FusionOp):
    """
    Random numbers of the result's shape and float type, each drawn independently from
    `distribution`: `uniform` in [0, 1), `normal` with mean 0 and standard deviation 1.

    Axis map: every result axis is made, not read, so a stream loop slices it freely: each
    iteration draws its own slice (different numbers from one draw of the whole, the same
    distribution).

    Verifies:
        The distribution is `uniform` or `normal`; the shape is static; the element type is a float.

    Example:
        %u = fusion.random uniform : tensor<4x8xf32>
    """

    name = "fusion.random"

    distribution = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(DrawsFromGenerator())
    assembly_format = "custom<BareWord>($distribution) attr-dict `:` type($result)"

    def __init__(self, distribution: str, result_type: Attribute):
        super().__init__(result_types=[result_type], properties={"distribution": StringAttr(distribution)})

    def result_shape(self) -> rules.Shape:
        if self.distribution.data not in DISTRIBUTIONS:
            raise VerifyException(
                f"the distribution must be one of {', '.join(DISTRIBUTIONS)}, got '{self.distribution.data}'"
            )
        shape = shape_of(self.result)
        if DYNAMIC_INDEX in shape:
            raise VerifyException(f"the shape {rules.fmt(shape)} must be static")
        return shape

    def verify_element_types(self) -> None:
        if not isinstance(element_type_of(self.result), AnyFloat):
            raise VerifyException(f"random numbers are floats: the element type must be one, got {self.result.type}")

    def axis_map(self) -> rules.AxisMap:
        return rules.generated_map(len(shape_of(self.result)))
