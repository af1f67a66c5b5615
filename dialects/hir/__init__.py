"""
The hir dialect: host programs over buffers (builtin memrefs) and CUDA streams. One module per
group of ops; this package re-exports them all (`from hir.dialects import hir; hir.LaunchOp`).

    base           types (!hir.stream, !hir.work), side effects, buffer-type rules, MeshOp
    buffers        allocate, deallocate, alias_select, alias_chunk
    loops          for, stream_for, yield
    launch         launch
    streams        get_current_stream, stream, num_streams, set_current_stream, synchronize
    communication  allgather, allreduce, reduce_scatter, reduce, all_to_all, broadcast, collective_permute,
                   send, recv, wait
    symmetric      device_index, peer_view, barrier
"""

from xdsl.ir import Dialect

from hir.dialects.definition_check import specialize_verification
from hir.dialects.hir.base import (
    READS_CURRENT_STREAM,
    WRITES_DEVICE_QUEUE,
    CurrentStream,
    DeviceQueue,
    HirEffects,
    MeshOp,
    StreamType,
    WorkType,
    contiguous_strides,
    memref_strides,
    read,
    tensor_fits_buffer,
    tensor_type_of,
    verify_mesh,
    write,
)
from hir.dialects.hir.buffers import (
    AliasChunkOp,
    AliasSelectOp,
    AllocateOp,
    DeallocateOp,
    chunk_bounds,
    chunk_extent,
    chunk_result_type,
    select_result_type,
)
from hir.dialects.hir.communication import (
    REDUCTION_KINDS,
    AllgatherOp,
    AllreduceOp,
    AllToAllOp,
    BroadcastOp,
    CollectivePermuteOp,
    CommunicationOp,
    PeerToPeerOp,
    RecvOp,
    ReduceOp,
    ReduceScatterOp,
    SendOp,
    TransferOp,
    WaitOp,
)
from hir.dialects.hir.launch import LaunchOp
from hir.dialects.hir.loops import ForOp, StreamForOp, YieldOp
from hir.dialects.hir.streams import GetCurrentStreamOp, NumStreamsOp, SetCurrentStreamOp, StreamOp, SynchronizeOp
from hir.dialects.hir.symmetric import BarrierOp, DeviceIndexOp, PeerViewOp
from hir.dialects.named_access import specialize_accessors

HIR_OPS = (
    AllocateOp,
    DeallocateOp,
    AliasSelectOp,
    AliasChunkOp,
    LaunchOp,
    ForOp,
    YieldOp,
    GetCurrentStreamOp,
    StreamOp,
    NumStreamsOp,
    SetCurrentStreamOp,
    SynchronizeOp,
    StreamForOp,
    AllgatherOp,
    AllToAllOp,
    AllreduceOp,
    ReduceScatterOp,
    ReduceOp,
    BroadcastOp,
    CollectivePermuteOp,
    SendOp,
    RecvOp,
    WaitOp,
    DeviceIndexOp,
    PeerViewOp,
    BarrierOp,
)

Hir = Dialect("hir", list(HIR_OPS), [StreamType, WorkType])
specialize_verification(Hir)
specialize_accessors(Hir)

__all__ = [
    "HIR_OPS",
    "READS_CURRENT_STREAM",
    "REDUCTION_KINDS",
    "WRITES_DEVICE_QUEUE",
    "AliasChunkOp",
    "AliasSelectOp",
    "AllToAllOp",
    "AllgatherOp",
    "AllocateOp",
    "AllreduceOp",
    "BarrierOp",
    "BroadcastOp",
    "CollectivePermuteOp",
    "CommunicationOp",
    "CurrentStream",
    "DeallocateOp",
    "DeviceIndexOp",
    "DeviceQueue",
    "ForOp",
    "GetCurrentStreamOp",
    "Hir",
    "HirEffects",
    "LaunchOp",
    "MeshOp",
    "NumStreamsOp",
    "PeerToPeerOp",
    "PeerViewOp",
    "RecvOp",
    "ReduceOp",
    "ReduceScatterOp",
    "SendOp",
    "SetCurrentStreamOp",
    "StreamForOp",
    "StreamOp",
    "StreamType",
    "SynchronizeOp",
    "TransferOp",
    "WaitOp",
    "WorkType",
    "YieldOp",
    "chunk_bounds",
    "chunk_extent",
    "chunk_result_type",
    "contiguous_strides",
    "memref_strides",
    "read",
    "select_result_type",
    "tensor_fits_buffer",
    "tensor_type_of",
    "verify_mesh",
    "write",
]
