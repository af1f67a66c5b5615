"""
SPMD driver for tests/test_nvfuser_scenarios.py: every rank of a 3-process gloo job runs it.

    python tests/nvfuser_scenarios_driver.py

Scenarios of nvFuser's multi-device and host-IR tests (tests/cpp/test_multidevice_*.cpp,
test_host_ir*.cpp), written for 3 devices on meshes that do not start at 0 or list their devices
out of order, with random inputs and poisoned allocations:

- fusion-level modules lowered by `stream-lowering`, run with 2 streams (race-checked) on this
  rank's shards and compared with the fusion-level reference on the devices of each output's mesh;
- hand-written hir programs with `hir.send` / `hir.recv` (a ring exchange, a send to itself);
- `hir.compile` of a tensor-parallel MLP whose logits go through a softmax on the mesh.

Rank 0 prints one line per case, `CASE name OK` or `CASE name FAIL` with every rank's problem.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ranks import own

import hir
from hir.dialects.parallel_encoding import layout_of
from hir.runtime.compare import mismatches
from hir.runtime.distributed import Session
from hir.runtime.inputs import random_inputs

MESH = "[2, 0, 1]"


def t(shape: str, kinds: str | None = None, mesh: str = MESH, element: str = "f32") -> str:
    """A tensor type: `t("3x4", "didx, serial")` -> tensor<3x4xf32, #fusion.parallel<...>>."""
    if kinds is None:
        return f"tensor<{shape}x{element}, #fusion.parallel<[{', '.join(['serial'] * len(shape.split('x')))}], mesh = {mesh}>>"
    return f"tensor<{shape}x{element}, #fusion.parallel<[{kinds}], mesh = {mesh}>>"


def module(args: list[tuple[str, str]], body: list[str], results: list[tuple[str, str]]) -> str:
    signature = ", ".join(f"%{n}: {ty}" for n, ty in args)
    types = ", ".join(ty for _, ty in results)
    values = ", ".join(f"%{n}" for n, _ in results)
    lines = "\n".join(f"  {line}" for line in body)
    return f"func.func @main({signature}) -> ({types}) {{\n{lines}\n  func.return {values} : {types}\n}}\n"


def op(result: str, name: str, operands: str, attrs: str, ins: list[str], out: str) -> str:
    return f"%{result} = fusion.{name} {operands}{' ' + attrs if attrs else ''} : {', '.join(ins)} -> {out}"


def fusion_modules() -> dict[str, str]:
    """Each nvFuser scenario as a fusion-level module for 3 devices."""
    m: dict[str, str] = {}
    # LowerCollectiveTest.Reduce: the sum over the devices onto one of them (was refused).
    x, y = t("3x4x6", "didx, serial, serial"), t("4x6", mesh="[1]")
    m["LowerCollective.Reduce"] = module([("x", x)], [op("y", "sum", "%x", "dims = [0]", [x], y)], [("y", y)])
    # ... onto two of them, per chunk of a stream loop.
    x, y = t("3x3x4", "serial, didx, serial"), t("3x4", "stream, serial", mesh="[1, 2]")
    m["Reduce.sub_mesh_per_chunk"] = module([("x", x)], [op("y", "sum", "%x", "dims = [1]", [x], y)], [("y", y)])
    # ... onto devices the source lacks: the all-reduce, then a broadcast (was refused).
    x, y = t("2x4", "didx, serial", mesh="[1, 2]"), t("4", mesh="[0, 2]")
    m["Reduce.onto_other_devices"] = module(
        [("x", x)], [op("a", "exp", "%x", "", [x], x), op("y", "sum", "%a", "dims = [0]", [x], y)], [("y", y)]
    )
    # A reduce-scatter onto a sub-mesh in another order (was refused).
    x, y = t("3x2x4", "didx, serial, serial"), t("2x4", "didx, serial", mesh="[1, 2]")
    m["ReduceScatter.onto_sub_mesh"] = module([("x", x)], [op("y", "sum", "%x", "dims = [0]", [x], y)], [("y", y)])
    # LowerCollectiveTest.Allgather_LoopSplit: an all-gather of a non-outermost axis.
    x, y = t("5x3x2", "serial, didx, serial"), t("5x3x2")
    m["LowerCollective.Allgather_inner"] = module([("x", x)], [op("y", "set", "%x", "", [x], y)], [("y", y)])
    # LowerCollectiveTest.ReduceScatterNoncontig: onto an inner axis.
    x, y = t("3x2x3", "didx, serial, serial"), t("2x3", "serial, didx")
    m["LowerCollective.ReduceScatter_inner"] = module(
        [("x", x)], [op("y", "sum", "%x", "dims = [0]", [x], y)], [("y", y)]
    )
    # LowerCollectiveTest.AllreduceNoncontig: into chunks of an inner stream axis (was refused).
    x, y = t("3x5x4", "didx, serial, serial"), t("5x4", "serial, stream")
    m["LowerCollective.AllreduceNoncontig"] = module(
        [("x", x)], [op("y", "sum", "%x", "dims = [0]", [x], y)], [("y", y)]
    )
    # DistributedMatmulTest.Matmul_LayoutNT_ReduceScatter.
    a, b = t("3x3x2x3", "didx, serial, serial, serial"), t("3x1x3x5", "didx, serial, serial, serial")
    p, c = t("3x3x2x5", "didx, serial, serial, serial"), t("3x2x5", "didx, serial, serial")
    m["DistributedMatmul.NT_ReduceScatter"] = module(
        [("a", a), ("b", b)],
        [op("p", "matmul", "%a, %b", "", [a, b], p), op("c", "sum", "%p", "dims = [0]", [p], c)],
        [("c", c)],
    )
    # MultiDeviceTest.DivideBySum: heads (3 per device) sharded, a sum along the last axis.
    x, s = t("2x9x5x5", "serial, didx, serial, serial"), t("2x9x5", "serial, didx, serial")
    m["MultiDevice.DivideBySum"] = module(
        [("x", x)],
        [
            op("s", "sum", "%x", "dims = [3]", [x], s),
            op("sb", "broadcast", "%s", "dims = [3]", [s], x),
            op("y", "div", "%x, %sb", "", [x, x], x),
        ],
        [("y", x)],
    )
    # MultiDeviceTest.Issue2758: a reduce-scatter, then a scalar added.
    x, y, r = t("3x3x4", "didx, serial, serial"), t("3x4", "didx, serial"), t("3x4")
    m["MultiDevice.Issue2758"] = module(
        [("x", x)],
        [
            op("s", "sum", "%x", "dims = [0]", [x], y),
            "%c = fusion.full 3.000000e+00 : tensor<f32>",
            op("cb", "broadcast", "%c", "dims = [0, 1]", ["tensor<f32>"], r),
            op("y", "add", "%s, %cb", "", [y, r], y),
        ],
        [("y", y)],
    )
    # MultiDeviceTest.LayerNorm over the sharded axis; Transpose into another sharded axis.
    x, w = t("4x3", "serial, didx"), t("3")
    m["MultiDevice.LayerNorm_sharded_axis"] = module(
        [("x", x), ("w", w), ("b", w)],
        [op("y", "layer_norm", "%x, %w, %b", "dims = [1] eps = 1.000000e-05", [x, w, w], x)],
        [("y", x)],
    )
    x, y = t("3x5", "didx, serial"), t("5x3", "didx, serial")
    m["MultiDevice.Transpose_reshard"] = module(
        [("x", x)], [op("y", "permute", "%x", "perm = [1, 0]", [x], y)], [("y", y)]
    )
    # MultiDeviceTest.ViewWithSplit: a reshape splitting the sharded axis.
    x, y = t("6x4", "didx, serial"), t("3x2x4", "didx, serial, serial")
    m["MultiDevice.ViewWithSplit"] = module([("x", x)], [op("y", "reshape", "%x", "", [x], y)], [("y", y)])
    # PipelineTestTwoStages: one device, then sharded over the mesh.
    x, x1, y = t("3x4", mesh="[2]"), t("3x4", mesh="[2]"), t("3x4", "didx, serial")
    m["Pipeline.TwoStages"] = module(
        [("x", x)],
        [
            op("a", "relu", "%x", "", [x], x1),
            op("b", "set", "%a", "", [x1], y),
            op("c", "tanh", "%b", "", [y], y),
        ],
        [("c", y)],
    )
    # PipelineTestTwoStages with sharded stages on meshes of different sizes (was refused).
    x, y = t("6x4", "didx, serial", mesh="[1, 2]"), t("6x4", "didx, serial")
    m["Pipeline.MeshesOfDifferentSizes"] = module(
        [("x", x)],
        [op("a", "exp", "%x", "", [x], x), op("b", "set", "%a", "", [x], y), op("c", "tanh", "%b", "", [y], y)],
        [("c", y)],
    )
    x, y = t("5x4", "didx, serial", mesh="[0, 1]"), t("5x4", "serial, serial", mesh="[2]")
    m["Pipeline.UnevenToOtherMesh"] = module(
        [("x", x)], [op("b", "set", "%x", "", [x], y), op("c", "neg", "%b", "", [y], y)], [("c", y)]
    )
    # InsertReshardingTest: the mesh and the sharded axis changing in one set (was refused).
    x, y = t("2x2x4", "didx, serial, serial", mesh="[0, 1]"), t("2x2x4", "serial, didx, serial", mesh="[2, 1]")
    m["InsertResharding.MeshAndAxis"] = module([("x", x)], [op("y", "set", "%x", "", [x], y)], [("y", y)])
    # RSMatmulTest.ReduceScatterReduceBased: a reduce to a rotating root per stream iteration.
    a, b = t("3x3x2x3", "didx, stream, serial, serial"), t("3x1x3x5", "didx, serial, serial, serial")
    p, c = t("3x3x2x5", "didx, stream, serial, serial"), t("3x2x5", "didx, serial, serial")
    m["RSMatmul.ReduceBased"] = module(
        [("a", a), ("b", b)],
        [op("p", "matmul", "%a, %b", "", [a, b], p), op("c", "sum", "%p", "dims = [0]", [p], c)],
        [("c", c)],
    )
    # A sub-mesh leaving device 0 out: an all-reduce on [1, 2] (None on device 0).
    x, y = t("2x4", "didx, serial", mesh="[1, 2]"), t("4", mesh="[1, 2]")
    m["SubMesh.Allreduce"] = module(
        [("x", x)], [op("a", "exp", "%x", "", [x], x), op("y", "sum", "%a", "dims = [0]", [x], y)], [("y", y)]
    )
    return m


def fusion_case(session: Session, text: str) -> list[str]:
    reference = hir.compile_program(hir.parse(text, "scenario"))
    inputs = random_inputs(reference.input_types, seed=0)
    expected = session.run_reference(reference, inputs)
    program = hir.compile_program(hir.run_pipeline(hir.parse(text, "scenario"), "stream-lowering"), race_check=True)
    outputs = session.run(program, inputs, num_streams=2)
    held = [session.rank in (layout_of(ty).mesh or [session.rank]) for ty in program.global_output_types]
    problems = [f"output #{k} is not None off its mesh" for k, h in enumerate(held) if not h and outputs[k] is not None]
    mine = [k for k, h in enumerate(held) if h]
    return problems + mismatches([outputs[k] for k in mine], [expected[k] for k in mine])


SHARDED = "{fusion.type = tensor<3x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2]>>}"
RING = f"""
func.func @main(%a: memref<1x4xf32> {SHARDED}) -> (memref<1x4xf32> {SHARDED}) {{
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %me = hir.device_index mesh = [0, 1, 2]
  %n = arith.addi %me, %c1 : index
  %next = arith.remui %n, %c3 : index
  %p = arith.addi %me, %c2 : index
  %prev = arith.remui %p, %c3 : index
  %b = hir.allocate() : memref<1x4xf32>
  %ws = hir.send %a to %next mesh = [0, 1, 2] : memref<1x4xf32>
  %wr = hir.recv %b from %prev mesh = [0, 1, 2] : memref<1x4xf32>
  hir.wait %ws
  hir.wait %wr
  func.return %b : memref<1x4xf32>
}}
"""
TO_SELF = f"""
func.func @main(%a: memref<1x4xf32> {SHARDED}) -> (memref<1x4xf32> {SHARDED}) {{
  %me = hir.device_index mesh = [0, 1, 2]
  %b = hir.allocate() : memref<1x4xf32>
  FIRST
  SECOND
  hir.wait %ws
  hir.wait %wr
  func.return %b : memref<1x4xf32>
}}
"""
SEND = "%ws = hir.send %a to %me mesh = [0, 1, 2] : memref<1x4xf32>"
RECV = "%wr = hir.recv %b from %me mesh = [0, 1, 2] : memref<1x4xf32>"


def hir_case(session: Session, text: str, expect: Callable[[torch.Tensor], torch.Tensor]) -> list[str]:
    """P2PCommHostIrTest.RingPairwiseExchange, CommunicationTest.SendRecvToSelf: written as hir."""
    x = torch.randn(3, 4)
    program = hir.compile_program(hir.parse(text, "p2p"), race_check=True)
    problems = []
    for _ in range(2):  # a second run sees nothing of the first
        problems += mismatches(session.run(program, [x], num_streams=2), [expect(x)])
    return problems


def receive_without_send(session: Session) -> list[str]:
    text = TO_SELF.replace("FIRST", RECV).replace("SECOND", "").replace("  hir.wait %ws\n", "")
    program = hir.compile_program(hir.parse(text, "p2p"))
    try:
        session.run(program, [torch.randn(3, 4)])
    except Exception as err:
        wanted = "p2p:7:3: error: 'hir.wait' op failed at run time"
        if wanted in str(err) and "no send to itself" in str(err):
            return []
        return [f"unexpected error: {type(err).__name__}: {err}"]
    return ["no error"]


class Classifier(torch.nn.Module):
    """A tensor-parallel MLP whose logits go through a softmax of each row (was 'not supported on a mesh')."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 12), torch.nn.Linear(12, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.fc2(F.gelu(self.fc1(x)))
        return F.softmax(logits, dim=-1), torch.log_softmax(logits * 2, 1)


class Projected(Classifier):
    """Rows times a replicated matrix (`x @ self.proj`, `torch.mm`) before the tensor-parallel MLP (was refused)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Parameter(torch.randn(6, 8))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        h = x @ self.proj
        return self.fc2(F.gelu(self.fc1(h))) @ self.proj.t(), torch.mm(h, self.proj.t())


def projection_case(rank: int, world: int, layout: str | None) -> list[str]:
    torch.manual_seed(0)
    model, x = Projected(), torch.randn(4 * world, 6)
    params = {"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]"}
    mesh = [2, 0, 1]
    compiled = hir.compile(model, (x,), [layout], [layout, layout], mesh=mesh, param_layouts=params)
    position = mesh.index(rank)
    with torch.no_grad():
        got, expected = compiled(own(x, position, world, layout)), model(x)
    return mismatches(list(got), [own(e, position, world, layout) for e in expected])


def softmax_case(rank: int, world: int, layout: str | None, training: bool) -> list[str]:
    torch.manual_seed(0)
    model, x = Classifier(), torch.randn(4 * world, 8)
    params = {"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]"}
    mesh = [2, 0, 1]
    step = hir.compile(model, (x,), [layout], [layout, layout], mesh=mesh, param_layouts=params, training=training)
    position = mesh.index(rank)
    mine = own(x, position, world, layout).clone().requires_grad_(training)
    got = step(mine)
    whole = x.clone().requires_grad_(training)
    expected = model(whole)
    problems = mismatches([g.detach() for g in got], [own(e.detach(), position, world, layout) for e in expected])
    if training and not problems:  # the gradient of this rank's rows (each rank's loss reads its rows)
        weights = torch.arange(8.0)
        (got[0] * weights).sum().backward()
        (expected[0] * weights).sum().backward()
        problems += mismatches([mine.grad], [own(whole.grad, position, world, layout)])
    return problems


def main() -> None:
    session = Session.from_environment("cpu")
    rank, world = session.rank, session.world_size
    cases: dict[str, Callable[[], list[str]]] = {
        name: (lambda text=text: fusion_case(session, text)) for name, text in fusion_modules().items()
    }
    cases["P2P.RingPairwiseExchange"] = lambda: hir_case(session, RING, lambda x: torch.roll(x, 1, 0))
    for order, (first, second) in {"send_first": (SEND, RECV), "recv_first": (RECV, SEND)}.items():
        text = TO_SELF.replace("FIRST", first).replace("SECOND", second)
        cases[f"Communication.SendRecvToSelf_{order}"] = lambda text=text: hir_case(session, text, lambda x: x)
    cases["Communication.RecvFromSelf_without_send"] = lambda: receive_without_send(session)
    for layout, training in (("[didx, serial]", False), ("[didx, serial]", True), (None, False)):
        name = f"Frontend.softmax_of_rows/{'sharded' if layout else 'replicated'}/{'training' if training else 'inference'}"
        cases[name] = lambda layout=layout, training=training: softmax_case(rank, world, layout, training)
    for layout in ("[didx, serial]", None):
        name = f"Frontend.rows_times_matrix/{'sharded' if layout else 'replicated'}"
        cases[name] = lambda layout=layout: projection_case(rank, world, layout)
    results: list[tuple[str, str | None]] = []
    for name, case in cases.items():
        torch.manual_seed(1)
        try:
            problems = case()
        except Exception as err:  # reported, then the next case runs
            problems = [f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"]
        results.append((name, "; ".join(problems) or None))
    per_rank: list[list[tuple[str, str | None]] | None] = [None] * world
    dist.all_gather_object(per_rank, results)
    if session.is_main:
        for k, (name, _) in enumerate(results):
            problems = [f"rank {r}: {seen[k][1]}" for r, seen in enumerate(per_rank) if seen and seen[k][1]]
            print(f"CASE {name} " + (f"FAIL {' | '.join(problems)}" if problems else "OK"), flush=True)
    session.close()


if __name__ == "__main__":
    main()
