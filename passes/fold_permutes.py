"""
A permute of a permute is one permute, and a permute that puts every axis back is its operand.

AOT autograd's backward graphs return a weight's gradient as `t(t(mm))` (the gradient of
`x @ W^T` is computed as the transpose of `g^T @ x`, then transposed back); each permute of a
value that leaves its segment costs a copy of the tensor. `fusion-segment` folds them first.

    %t = fusion.permute %mm perm = [1, 0] ...
    %u = fusion.permute %t perm = [1, 0] ...      ->   uses of %u read %mm
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from hir.dialects import fusion
from hir.dialects.syntax import array_values


def _returned(value: SSAValue) -> bool:
    return any(isinstance(use.operation, func.ReturnOp) for use in value.uses)


class FoldPermuteOfPermute(RewritePattern):
    """`permute(permute(x, p), q)` -> `permute(x, p∘q)`, or `x` itself where that is the identity."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fusion.PermuteOp, rewriter: PatternRewriter) -> None:
        inner = op.x.owner
        if not isinstance(inner, fusion.PermuteOp):
            return
        outer_perm, inner_perm = array_values(op.perm), array_values(inner.perm)
        composed = [inner_perm[p] for p in outer_perm]  # result axis i is x's axis inner[outer[i]]
        source = inner.x
        if composed == list(range(len(composed))):
            # The operand itself, where that changes no type and makes no output an alias of an
            # argument or of another output (the runtime returns each output in its own buffer).
            if source.type != op.result.type or isinstance(source, BlockArgument):
                return
            if _returned(source) and _returned(op.result):
                return
            rewriter.replace(op, [], [source])
        else:
            rewriter.replace(op, fusion.PermuteOp(source, composed, op.result.type))
        if not inner.result.uses:
            rewriter.erase(inner)


def fold_permutes(module: ModuleOp) -> None:
    PatternRewriteWalker(FoldPermuteOfPermute(), apply_recursively=True).rewrite_module(module)
