"""Streams: the current stream, pool streams, the stream count, and waits between streams."""

from __future__ import annotations

from abc import ABC

from xdsl.dialects.builtin import IndexType
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import EffectInstance, Pure
from xdsl.utils.exceptions import VerifyException

from hir.dialects.hir.base import (
    READS_CURRENT_STREAM,
    WRITES_DEVICE_QUEUE,
    CurrentStream,
    HirEffects,
    StreamType,
    constant_index,
    write,
)


@irdl_op_definition
class GetCurrentStreamOp(IRDLOperation):
    """
    The stream currently in use (the caller's stream at the start of the program).

    Example:
        %main = hir.get_current_stream
    """

    name = "hir.get_current_stream"

    result = result_def(StreamType)

    traits = traits_def(HirEffects())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[StreamType()])

    def effects(self) -> set[EffectInstance]:
        return {READS_CURRENT_STREAM}


@irdl_op_definition
class StreamOp(IRDLOperation):
    """
    Pool stream number `index`: the same CUDA stream for the same number, across runs.

    Verifies:
        A constant `index` is >= 0.

    Example:
        %s = hir.stream %k
    """

    name = "hir.stream"

    index = operand_def(IndexType)
    result = result_def(StreamType)

    traits = traits_def(Pure())
    assembly_format = "$index attr-dict"

    def __init__(self, index: SSAValue):
        super().__init__(operands=[index], result_types=[StreamType()])

    def verify_(self) -> None:
        if (number := constant_index(self.index)) is not None and number < 0:
            raise VerifyException(f"the stream number must be >= 0, got {number}")


@irdl_op_definition
class NumStreamsOp(IRDLOperation):
    """
    The runtime's number of streams (a run parameter, default 4).

    Example:
        %n = hir.num_streams
    """

    name = "hir.num_streams"

    result = result_def(IndexType)

    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


class OnStreamOp(IRDLOperation, ABC):
    """An op on one stream (`hir.X %stream`), whose effects its subclass declares."""

    stream = operand_def(StreamType)

    traits = traits_def(HirEffects())
    assembly_format = "$stream attr-dict"

    def __init__(self, stream: SSAValue):
        super().__init__(operands=[stream])


@irdl_op_definition
class SetCurrentStreamOp(OnStreamOp):
    """
    Makes `stream` current for what follows.

    Example:
        hir.set_current_stream %s
    """

    name = "hir.set_current_stream"

    def effects(self) -> set[EffectInstance]:
        return {write(resource=CurrentStream())}


@irdl_op_definition
class SynchronizeOp(OnStreamOp):
    """
    The current stream waits for everything enqueued so far on `stream` (an event record on
    `stream` plus a wait on the current one; the host never blocks).

    Example:
        hir.synchronize %s
    """

    name = "hir.synchronize"

    def effects(self) -> set[EffectInstance]:
        return {READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE}
