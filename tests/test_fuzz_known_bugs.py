"""
Reproducers of the bugs the fuzzer found (docs/testing.md, "Known bugs and their reproducers", by number).
An open one is `xfail(strict=True)`: it fails while the bug is there, and the test run fails
once the bug is fixed, as a reminder to drop the `xfail` (the test stays, as a regression test)
and the generator's workaround (tests/fuzz/mesh_rules.py `known_bug`, `FuzzProgram.facts`,
`KNOWN_FAILURES` and `KNOWN_EXCEPTIONS` in tests/test_fuzz_invalid_input.py).

Each test is cheap and runs in this process: the lowered IR is inspected where the wrong answer
needs several processes to show.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from fuzz.mutations import located_error, run_hir_opt
from xdsl.dialects.builtin import ModuleOp

import hir
from hir.diagnostics import LocatedError
from hir.dialects import hir as hir_ops

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def communication_ops(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if isinstance(op, hir_ops.CommunicationOp | hir_ops.PeerViewOp)]


def test_bug5_max_over_sharded_axis_communicates() -> None:
    text = """
func.func @main(%x: tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>> {
  %m = fusion.max %x dims = [0] : tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  func.return %m : tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
}
"""
    lowered = hir.run_pipeline(hir.parse(text), "stream-lowering")
    assert communication_ops(lowered), f"the max reads only this device's shard:\n{lowered}"


def test_bug5_contraction_over_sharded_axis_lowers() -> None:
    text = """
func.func @main(%x: tensor<2xf32, #fusion.parallel<[didx], mesh = [0, 1]>>, %w: tensor<6x2xf32>) -> tensor<6xf32, #fusion.parallel<[stream(2)], mesh = [0, 1]>> {
  %y = fusion.linear %x, %w : tensor<2xf32, #fusion.parallel<[didx], mesh = [0, 1]>>, tensor<6x2xf32> -> tensor<6xf32, #fusion.parallel<[stream(2)], mesh = [0, 1]>>
  func.return %y : tensor<6xf32, #fusion.parallel<[stream(2)], mesh = [0, 1]>>
}
"""
    lowered = hir.run_pipeline(hir.parse(text, "bug5.mlir"), "stream-lowering")
    assert "hir.allgather" in communication_ops(lowered)


def test_bug6_partial_sum_keeps_its_allreduce_with_resharding_only() -> None:
    module = hir.parse_file(EXAMPLES / "multidevice" / "matmul_allreduce.mlir")
    lowered = hir.run_pipeline(module, "stream-lowering{policy=resharding-only}")
    assert "hir.allreduce" in communication_ops(lowered), f"each device keeps its partial sum:\n{lowered}"


def test_bug7_loop_over_inner_sharded_axis() -> None:
    text = """
func.func @main(%x: tensor<6x2x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, %w: tensor<6xf32>) -> tensor<6x2xf32, #fusion.parallel<[serial, stream], mesh = [0, 1]>> {
  %y = fusion.linear %x, %w : tensor<6x2x6xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>, tensor<6xf32> -> tensor<6x2xf32, #fusion.parallel<[serial, stream], mesh = [0, 1]>>
  func.return %y : tensor<6x2xf32, #fusion.parallel<[serial, stream], mesh = [0, 1]>>
}
"""
    lowered = hir.run_pipeline(hir.parse(text, "bug7.mlir"), "stream-lowering{intermediates=whole}")
    # Each iteration's shard is broadcast into a contiguous temporary, then copied into the strided view.
    assert "hir.broadcast" in communication_ops(lowered)
    assert "%received = hir.allocate() : memref<6x6xf32>" in str(lowered), str(lowered)


def test_bug8_copy_engine_one_dimensional_shard(tmp_path: Path) -> None:
    path = tmp_path / "bug8.mlir"
    path.write_text("""
func.func @main(%x: tensor<2xf32, #fusion.parallel<[didx], mesh = [0, 1]>>, %y: tensor<2xf32, #fusion.parallel<[stream], mesh = [0, 1]>>) -> tensor<2xf32, #fusion.parallel<[stream], mesh = [0, 1]>> {
  %z = fusion.mul %y, %x : tensor<2xf32, #fusion.parallel<[stream], mesh = [0, 1]>>, tensor<2xf32, #fusion.parallel<[didx], mesh = [0, 1]>> -> tensor<2xf32, #fusion.parallel<[stream], mesh = [0, 1]>>
  func.return %z : tensor<2xf32, #fusion.parallel<[stream], mesh = [0, 1]>>
}
""")
    result = run_hir_opt(path, ["-p", "stream-lowering{backend=copy-engine}"], 60)  # was an IndexError
    assert result.status == 0, result.stderr


@pytest.fixture
def one_process_group() -> object:
    """A gloo process group of this process alone (a mesh of one device), for the runtime's collectives."""
    if not dist.is_available() or not dist.is_gloo_available() or dist.is_initialized():
        pytest.skip("needs torch.distributed with gloo, not yet initialized")
    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    yield
    dist.destroy_process_group()


def test_bug9_int16_allgather(one_process_group: object) -> None:
    from hir.runtime.distributed import ProcessGroupCommunicator

    text = """
func.func @main(%x: tensor<1x4xi16, #fusion.parallel<[didx, serial], mesh = [0]>>) -> tensor<1x4xi16, #fusion.parallel<[serial, serial], mesh = [0]>> {
  %y = fusion.set %x : tensor<1x4xi16, #fusion.parallel<[didx, serial], mesh = [0]>> -> tensor<1x4xi16, #fusion.parallel<[serial, serial], mesh = [0]>>
  func.return %y : tensor<1x4xi16, #fusion.parallel<[serial, serial], mesh = [0]>>
}
"""
    lowered = hir.run_pipeline(hir.parse(text, "bug9.mlir"), "stream-lowering")
    assert "hir.allgather" in communication_ops(lowered)
    x = torch.tensor([[-32768, -1, 12345, 32767]], dtype=torch.int16)  # the extremes survive the widening
    (y,) = hir.execute(lowered, [x], communicator=ProcessGroupCommunicator(0, 1))  # int16 travels as int32
    assert y.dtype == torch.int16
    assert torch.equal(y, x)


@pytest.mark.parametrize(
    "line",
    ["%c3 = arith.constant 3 : ui8", "%c1 = arith.constant 1 : i0", "%c = arith.remui %i, %i : f32"],
    ids=["unsigned-constant", "i0-constant", "operand-type"],
)
def test_bug10_type_constraint_errors_are_located(tmp_path: Path, line: str) -> None:
    path = tmp_path / "bug10.mlir"
    path.write_text(f"""
func.func @main(%a: memref<4xf32>, %i: index) -> memref<4xf32> {{
  {line}
  func.return %a : memref<4xf32>
}}
""")
    result = run_hir_opt(path, [], 60)
    assert result.status == 1
    assert located_error(result.stderr, path), result.stderr


def test_bug11_out_of_range_list_entry_is_located(tmp_path: Path) -> None:
    path = tmp_path / "bug11.mlir"
    path.write_text("""
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = fusion.permute %a perm = [100000000000000000000] : tensor<4xf32> -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}
""")
    result = run_hir_opt(path, [], 60)
    assert result.status == 1
    assert located_error(result.stderr, path), result.stderr


def test_bug12_copy_engine_on_a_rank_outside_the_mesh(
    one_process_group: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hir.runtime.distributed import ProcessGroupCommunicator
    from hir.runtime.executor import Program

    text = """
func.func @main(%x: tensor<2x1xf32, #fusion.parallel<[didx, serial], mesh = [1, 2]>>) -> tensor<2x1xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.neg %x : tensor<2x1xf32, #fusion.parallel<[didx, serial], mesh = [1, 2]>> -> tensor<2x1xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<2x1xf32, #fusion.parallel<[stream, serial]>>
}
"""
    lowered = hir.run_pipeline(hir.parse(text, "bug12.mlir"), "stream-lowering{backend=copy-engine chunks=1}")
    assert "hir.peer_view" in communication_ops(lowered)
    program = hir.compile_program(lowered)
    # A job of one process cannot run a program on devices [1, 2]: the job check says so.
    with pytest.raises(LocatedError, match=r"runs on devices \[1, 2\], which needs 3 processes, but the job has 1"):
        program([torch.ones(1, 1)], communicator=ProcessGroupCommunicator(0, 1))
    # What the reproducer is about: rank 0 of the job runs the program too (SPMD) and takes no part
    # in the mesh's communication, as with NCCL. Ranks 1 and 2 are not here, so the job check is
    # skipped for this one call; any transfer, barrier or group of mesh [1, 2] that rank 0 took part
    # in would fail, as the process group has this process alone.
    monkeypatch.setattr(Program, "_check_devices", lambda self, communicator: None)
    communicator = ProcessGroupCommunicator(0, 1)
    program([torch.ones(1, 1)], communicator=communicator)  # was: 'hir.device_index' op failed
    assert not communicator.symmetric.peer_views, "device 0 mapped a buffer of the mesh's devices"
    assert not communicator.groups, "device 0 made a process group of the mesh's devices"


def test_bug13_use_of_a_value_in_its_defining_op_is_located(tmp_path: Path) -> None:
    path = tmp_path / "bug13.mlir"
    path.write_text("""
func.func @main(%a: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  hir.for %i = %c0 to %c1 step %i {
  }
  func.return %a : memref<4xf32>
}
""")
    result = run_hir_opt(path, [], 60)
    assert result.status == 1
    assert located_error(result.stderr, path), result.stderr


def root_buffer(value: object) -> object:
    """The buffer a view (`hir.alias_select`, `hir.alias_chunk`) is a view of."""
    while isinstance(getattr(value, "owner", None), hir_ops.AliasSelectOp | hir_ops.AliasChunkOp):
        value = value.owner.buffer  # type: ignore[attr-defined]
    return value


@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_bug14_copy_engine_chunks_with_two_gathered_operands(chunks: int) -> None:
    """
    Both operands of a batched matmul gathered in one loop over the shards: with chunks > 1 one
    slot's pushes were chunked (its consumer moved into an `scf.if`), and the other slot's rewrite
    only redirected readers at the loop's top level, so the chunked matmuls read the plain gathered
    buffer, which nothing writes any more (a wrong answer on every device).
    """
    text = """
func.func @main(%a: tensor<2x3x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %b: tensor<2x3x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x3x3xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>> {
  %c = fusion.matmul %a, %b : tensor<2x3x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<2x3x3xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x3x3xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<2x3x3xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
}
"""
    lowered = hir.run_pipeline(hir.parse(text, "bug14.mlir"), f"stream-lowering{{backend=copy-engine chunks={chunks}}}")
    launches = [op for op in lowered.walk() if isinstance(op, hir_ops.LaunchOp)]
    written = {root_buffer(out) for launch in launches for out in launch.outs}
    read = {root_buffer(v) for launch in launches for v in launch.ins}
    allocated = {op.results[0] for op in lowered.walk() if isinstance(op, hir_ops.AllocateOp)}
    unwritten = [v for v in read & allocated if v not in written and not getattr(v.owner, "symmetric", None)]
    assert not unwritten, f"launches read {[v.name_hint for v in unwritten]}, which nothing writes:\n{lowered}"
    assert "hir.peer_view" in str(lowered)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_bug15_empty_symmetric_buffer_on_cpu(one_process_group: object, dtype: torch.dtype) -> None:
    """
    The copy-engine backend on a value with an extent-0 axis: the CPU symmetric heap viewed its
    shared-memory segment with `torch.frombuffer(count=0)`, which torch refuses ("both buffer
    length (1) and count (0) must not be 0"), a crash of `hir.allocate` at run time. An empty
    symmetric buffer is now a plain empty tensor, and a peer's view of it the buffer itself.
    """
    from hir.runtime.distributed import ProcessGroupCommunicator
    from hir.runtime.hir_ops import BufferKey

    heap = ProcessGroupCommunicator(0, 1).symmetric
    keys = BufferKey(), BufferKey()
    a = heap.empty(keys[0], (2, 0, 3), dtype, torch.device("cpu"))
    b = heap.empty(keys[1], (0,), dtype, torch.device("cpu"))
    assert a.shape == (2, 0, 3)
    assert b.shape == (0,)
    assert a.dtype == b.dtype == dtype
    assert heap.peer_view(a, 1) is a  # a peer's empty buffer: nothing to reach
    assert heap.peer_view(b, 1) is b


BUG17_SETS = [
    ("[didx, serial, stream], mesh = [0]", "[didx, serial, stream], mesh = [1]"),  # send/recv
    ("[didx, serial, stream(3)], mesh = [0, 1]", "[didx, serial, stream(3)], mesh = [1, 0]"),  # send/recv
    ("[didx, serial, stream], mesh = [0, 1]", "[serial, didx, stream], mesh = [0, 1]"),  # all-to-all
    ("[didx, stream, serial], mesh = [0, 1]", "[serial, stream, didx], mesh = [0, 1]"),  # all-to-all
]


def bug17_program(source: str, result: str) -> str:
    """A set from one placement to another of a [E, 2, 2] tensor (E = 1 on a one-device mesh)."""
    extent = 1 if "mesh = [0]" in source else 2

    def t(encoding: str) -> str:
        return f"tensor<{extent}x2x2xf32, #fusion.parallel<{encoding}>>"

    return f"""
func.func @main(%x: {t(source)}) -> {t(result)} {{
  %y = fusion.set %x : {t(source)} -> {t(result)}
  func.return %y : {t(result)}
}}
"""


@pytest.mark.parametrize(("source", "result"), BUG17_SETS)
def test_bug17_strided_slice_in_all_to_all_or_move(source: str, result: str) -> None:
    text = bug17_program(source, result)
    lowered = hir.run_pipeline(hir.parse(text, "bug17.mlir"), "stream-lowering")
    assert {"hir.send", "hir.all_to_all"} & set(communication_ops(lowered))


@pytest.mark.distributed
@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo")
def test_bug17_strided_slices_match_on_two_ranks(tmp_path: Path) -> None:
    """The four sets of bug 17, lowered through contiguous temporaries, against the reference on 2 gloo ranks."""
    from fuzz.driver import Case, write_cases
    from ranks import run_ranks

    cases = []
    for k, (source, result) in enumerate(BUG17_SETS):
        cases.append(Case(f"bug17-{k}", bug17_program(source, result), "stream-lowering", 1, 2))
    path = tmp_path / "cases.json"
    write_cases(path, cases)
    driver = Path(__file__).resolve().parent / "fuzz" / "driver.py"
    result = run_ranks([str(driver), str(path)], processes=2, timeout=120)
    for k in range(len(BUG17_SETS)):
        assert f"CASE bug17-{k} OK" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]


BUG18 = """
func.func @main(%x: tensor<2x2x1xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %w: tensor<2x2x1xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x1xf32, #fusion.parallel<[stream(2), serial, serial], mesh = [0, 1]>> {
  %g = fusion.set %x : tensor<2x2x1xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x1xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  %y = fusion.mul %g, %w : tensor<2x2x1xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>, tensor<2x2x1xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x1xf32, #fusion.parallel<[stream(2), serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x2x1xf32, #fusion.parallel<[stream(2), serial, serial], mesh = [0, 1]>>
}
"""


@pytest.mark.distributed
@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo")
def test_bug18_copy_engine_shard_loop_read_by_another_loop(tmp_path: Path) -> None:
    from fuzz.driver import Case, write_cases
    from ranks import run_ranks

    path = tmp_path / "cases.json"
    pipeline = "stream-lowering{backend=copy-engine}"
    write_cases(path, [Case("bug18", BUG18, pipeline, 1, 1), Case("bug18-nccl", BUG18, "stream-lowering", 1, 1)])
    driver = Path(__file__).resolve().parent / "fuzz" / "driver.py"
    result = run_ranks([str(driver), str(path)], processes=2, timeout=120)
    assert "CASE bug18-nccl OK" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]
    assert "CASE bug18 OK" in result.stdout, result.stdout[-2000:]


@pytest.mark.distributed
@pytest.mark.parametrize("backend", ["copy-engine", "ring"])
def test_packed_shard_slots_on_two_ranks(backend: str) -> None:
    """
    A loop over the shards whose slot is a strided view (the gathered axis last): the backends give
    the slots a [D, *shard] buffer (the fuzzer found the ring's select of two view types, seed 32);
    against the reference on 2 gloo ranks, poisoned and race-checked.
    """
    from ranks import run_ranks

    program = Path(__file__).resolve().parent / "lit" / "passes" / "multidevice" / "shard_slots_packed.mlir"
    result = run_ranks(
        [
            "-m",
            "hir.tools.hir_run",
            str(program),
            "--check",
            "--race-check",
            "--poison",
            "-p",
            f"stream-lowering{{backend={backend}}}",
        ],
        timeout=90,
    )
    output = f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    assert "1 output matches)" in result.stdout, output


BUG19 = """
func.func @main(%a: tensor<1x2x3xf32>, %b: tensor<4x3x5xf32>) -> (tensor<1x2x3xf32, #fusion.parallel<[stream, serial, serial]>>, tensor<4x2x5xf32, #fusion.parallel<[stream, serial, serial]>>) {
  %p = fusion.relu %a : tensor<1x2x3xf32> -> tensor<1x2x3xf32, #fusion.parallel<[stream, serial, serial]>>
  %q = fusion.matmul %p, %b : tensor<1x2x3xf32, #fusion.parallel<[stream, serial, serial]>>, tensor<4x3x5xf32> -> tensor<4x2x5xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %p, %q : tensor<1x2x3xf32, #fusion.parallel<[stream, serial, serial]>>, tensor<4x2x5xf32, #fusion.parallel<[stream, serial, serial]>>
}
"""


@pytest.mark.parametrize("policy", ["standalone-host-ops", "resharding-only"])
def test_bug19_extent_one_stream_axis_broadcast_stays_out_of_the_segment(policy: str) -> None:
    """
    A matmul broadcasting its operand's extent-1 stream axis into a stream axis of 4: fusion-segment
    kept the two in one segment (the axis map relates the axes), whose loops would run 1 and 4
    iterations, and convert-fusion-to-hir refused it. Lowered and run against the reference.
    """
    from fuzz.check import RunOptions, check_lowering

    assert check_lowering(BUG19, RunOptions(num_streams=2, policy=policy)) is not None


BUG21 = """
func.func @main(%x: tensor<2x1x3xf64>, %w: tensor<0x3xf64>, %b: tensor<f64>) -> tensor<2x1x0xf64, #fusion.parallel<[stream, serial, serial]>> {
  %y = fusion.linear %x, %w, %b : tensor<2x1x3xf64>, tensor<0x3xf64>, tensor<f64> -> tensor<2x1x0xf64>
  %z = fusion.set %y : tensor<2x1x0xf64> -> tensor<2x1x0xf64, #fusion.parallel<[stream, serial, serial]>>
  func.return %z : tensor<2x1x0xf64, #fusion.parallel<[stream, serial, serial]>>
}
"""


@pytest.mark.parametrize("num_streams", [1, 2])
def test_bug21_a_biased_linear_with_no_output_features(num_streams: int) -> None:
    """
    A linear with a bias on a 3-D input whose weight has no rows (an empty output axis): the
    one-addmm path counted the rows as numel // 0. Lowered and run against the reference.
    """
    from fuzz.check import RunOptions, check_lowering

    assert check_lowering(BUG21, RunOptions(num_streams=num_streams)) is not None


BUG22 = """
func.func @main(%a: tensor<3x1x3x3xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0]>>, %b: tensor<3x1x3x3xf32, #fusion.parallel<[serial, serial, serial, serial], mesh = [0]>>) -> tensor<3x1x3x3xf32, #fusion.parallel<[serial, stream, serial, serial], mesh = [0]>> {
  %c = fusion.matmul %a, %b : tensor<3x1x3x3xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0]>>, tensor<3x1x3x3xf32, #fusion.parallel<[serial, serial, serial, serial], mesh = [0]>> -> tensor<3x1x3x3xf32, #fusion.parallel<[serial, stream, serial, serial], mesh = [0]>>
  func.return %c : tensor<3x1x3x3xf32, #fusion.parallel<[serial, stream, serial, serial], mesh = [0]>>
}
"""


def matches_reference(text: str, pipeline: str, name: str) -> None:
    """Lowers `text`, runs it on this process (a mesh of one device needs no other) against the reference."""
    from hir.runtime.inputs import random_inputs

    reference = hir.compile_program(hir.parse(text, f"{name}.mlir"))
    inputs = random_inputs(reference.input_types, seed=3)
    expected = reference(inputs)
    lowered = hir.compile_program(hir.run_pipeline(hir.parse(text, f"{name}.mlir"), pipeline), race_check=True)
    for num_streams in (1, 3):
        for got, want in zip(lowered(inputs, num_streams=num_streams), expected, strict=True):
            torch.testing.assert_close(got, want)


def test_bug22_by_shard_moves_a_stream_axis_only_where_the_op_slices() -> None:
    """
    On the mesh [0]: overlap=by-shard moved the matmul's stream axis (its batch axis of extent 1)
    onto M, which a rank-4 operand cannot be sliced on, and convert-fusion-to-hir refused the
    function. It is left as written now (tests/lit/passes/fusion-stream-overlap/by_shard_unsliceable.mlir).
    """
    matches_reference(BUG22, "stream-lowering{overlap=by-shard}", "bug22")


def test_bug23_auto_keeps_the_pipeline_of_a_chunked_gemm_reduce_scatter() -> None:
    """
    overlap=auto made the chunked GEMM + reduce-scatter serial, whose reduce-scatter along an inner
    axis hir-lower-communication refused: on two devices and on one. The pipeline is kept now
    (tests/lit/passes/fusion-stream-overlap/never_reduce_scatter_invalid.mlir).
    """
    two = hir.run_pipeline(
        hir.parse_file(EXAMPLES / "multidevice" / "matmul_reduce_scatter.mlir"), "stream-lowering{overlap=auto}"
    )
    assert "hir.for" in str(two)
    assert "hir.reduce_scatter" in str(two)
    one = Path(__file__).resolve().parent / "resharding" / "one_device" / "matmul_reduce_scatter_1.mlir"
    matches_reference(one.read_text(), "stream-lowering{overlap=auto}", "bug23")


BUG24 = """
func.func @main(%x: tensor<2x4x4xi1, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x4x4x4xi1, #fusion.parallel<[didx, stream(2), serial, serial], mesh = [0, 1]>> {
  %v = fusion.broadcast %x dims = [1] : tensor<2x4x4xi1, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x4x4x4xi1, #fusion.parallel<[didx, stream(2), serial, serial], mesh = [0, 1]>>
  func.return %v : tensor<2x4x4x4xi1, #fusion.parallel<[didx, stream(2), serial, serial], mesh = [0, 1]>>
}
"""


def test_bug24_chunks_of_a_broadcasts_new_axis_beside_a_sharded_axis() -> None:
    """
    A broadcast's new axis in stream(2) chunks, its operand sharded over 2 devices: the check that a
    chunk computes its slice compared the op's global extents with a probe's local ones (the didx
    axis has extent 1 there) and refused the function
    (tests/lit/passes/multidevice/broadcast_mesh_chunks.mlir).
    """
    lowered = hir.run_pipeline(hir.parse(BUG24, "bug24.mlir"), "stream-lowering")
    assert "hir.alias_chunk" in str(lowered)
    assert "fusion.broadcast" in str(lowered)
