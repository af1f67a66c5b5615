"""
frontend/handed_outputs.py: a replay's results handed out as aliases of the graph's buffers, and
what `reclaim` does before the next replay, by who still holds them. Plain CPU tensors stand in
for the graph's buffers: `overwrite` is what a replay does to them.
"""

from __future__ import annotations

import torch

from hir.frontend.handed_outputs import HandedOutputs


def overwrite(buffer: torch.Tensor) -> None:
    buffer.fill_(float("nan"))


def test_a_dropped_result_costs_nothing() -> None:
    buffer, handed = torch.randn(4, 8), HandedOutputs()
    result = handed.hand_out(buffer, buffer)
    assert result is not buffer
    assert result.data_ptr() == buffer.data_ptr()
    del result
    assert handed.reclaim()
    assert not handed


def test_a_result_held_alone_moves_and_keeps_its_values() -> None:
    buffer, handed = torch.randn(4, 8), HandedOutputs()
    result = handed.hand_out(buffer, buffer)
    values = result.clone()
    assert handed.reclaim()
    assert result.data_ptr() != buffer.data_ptr()
    overwrite(buffer)
    assert torch.equal(result, values)


def test_a_view_of_a_result_keeps_the_buffer_from_being_overwritten() -> None:
    buffer, handed = torch.randn(4, 8), HandedOutputs()
    row = handed.hand_out(buffer, buffer)[1]  # the alias dropped, a view of it kept
    assert not handed.reclaim()
    del row
    assert handed.reclaim()
    result = handed.hand_out(buffer, buffer)
    column = result[:, 0]  # the alias and a view of it
    assert not handed.reclaim()
    assert len(handed) == 1
    del column
    assert handed.reclaim()  # the alias alone now: moved
    assert result.data_ptr() != buffer.data_ptr()


def test_the_runtimes_own_references_are_not_the_callers() -> None:
    """Views the runtime itself keeps of a buffer (a frame's, a layout's reshape) count as its own."""
    buffer, handed = torch.randn(4, 8), HandedOutputs()
    own = [buffer.view(32), buffer[0]]
    local = buffer.reshape(2, 16)  # the output's local form: a view made for the caller
    result = handed.hand_out(local, buffer)
    assert result is local
    del local, result
    assert handed.reclaim()
    result = handed.hand_out(buffer.reshape(2, 16), buffer)
    values = result.clone()
    assert handed.reclaim()
    overwrite(buffer)
    assert torch.equal(result, values)
    assert len(own) == 2


def test_an_alias_held_since_an_earlier_hand_out_is_not_lost() -> None:
    """Two hand-outs of one buffer without a reclaim between them (a first call's measured runs)."""
    buffer, handed = torch.randn(4, 8), HandedOutputs()
    first = handed.hand_out(buffer, buffer)
    second = handed.hand_out(buffer, buffer)
    assert not handed.reclaim()  # two tensors over the buffer: neither can be moved alone
    del second
    assert handed.reclaim()
    values = first.clone()
    overwrite(buffer)
    assert torch.equal(first, values)
