"""
The tensor-parallel MLP's training step compiled with hir.compile(..., training=True) on a mesh of
every rank, run under torchrun (gloo on CPU), against the unsharded module run eagerly with
autograd on the same global input: the output rows, the input gradient's rows, each sharded
parameter's gradient block (and zeros elsewhere), replicated parameters' whole gradients, and a
few SGD and AdamW steps whose losses track eager's; the same for Megatron's TP transformer layer
(benchmarks/tp_layer.py: attention of each rank's heads), for nanoGPT's hand-written attention
and for a Llama layer (rotary embeddings, grouped-query attention, a SiLU-gated MLP). Exits non-zero (on every rank) when a result differs.

    python -m torch.distributed.run --nproc-per-node 2 tests/training_mesh_driver.py
    python -m torch.distributed.run --nproc-per-node 4 tests/training_mesh_driver.py --quick

`--quick`: one step (biases, a residual add, 2 chunks), one of the TP transformer layer, and
the SGD loop.
"""

from __future__ import annotations

import copy
import os
import socket
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ranks import job_verdict

import hir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from tp_layer import PARAM_LAYOUTS as LAYER_PARAMS
from tp_layer import TPLayer
from tp_layer_driver import GQA_LAYOUTS, LLAMA_LAYOUTS, HandWrittenAttention, LlamaLayer

H, FFN, M, SEQ = 16, 32, 32, 8
TOL = dict(rtol=1e-4, atol=1e-5)


class MLP(torch.nn.Module):
    def __init__(self, bias: bool, residual: bool, activation: str):
        super().__init__()
        self.fc1 = torch.nn.Linear(H, FFN, bias=bias)
        self.fc2 = torch.nn.Linear(FFN, H, bias=bias)
        self.residual = residual
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        h = F.gelu(h) if self.activation == "gelu" else F.relu(h) if self.activation == "relu" else F.silu(h) * 0.5
        y = self.fc2(h)
        return x + y if self.residual else y


class Gated(MLP):
    """The MLP's output times its input: the backward reads x's rows elementwise (not gathered)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) * x


class PreNorm(torch.nn.Module):
    """A pre-norm MLP block: the norm's weight (and bias) are replicated, their gradients all-reduced."""

    def __init__(self, norm: str):
        super().__init__()
        self.norm = torch.nn.LayerNorm(H) if norm == "layer" else torch.nn.RMSNorm(H)
        self.fc1 = torch.nn.Linear(H, FFN)
        self.fc2 = torch.nn.Linear(FFN, H)
        with torch.no_grad():
            self.norm.weight.add_(torch.randn(H) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


PARAMS = {"fc1.weight": "[didx, serial]", "fc2.weight": "[serial, didx]", "fc1.bias": "[didx]", "fc2.bias": None}
"""Column-parallel fc1 (its bias sharded with it), row-parallel fc2 (its bias replicated)."""


def rows_of(t: torch.Tensor, chunks: int, position: int, devices: int) -> torch.Tensor:
    return t.reshape(chunks, devices, -1, t.shape[1])[:, position].reshape(-1, t.shape[1])


def shard_check(name: str, got: torch.Tensor | None, want: torch.Tensor | None, layout: str | None) -> str | None:
    """A sharded parameter's .grad: this rank's block is eager's, the rest zero; a replicated one: eager's."""
    rank, world = dist.get_rank(), dist.get_world_size()
    if want is None:  # a frozen parameter
        return None if got is None else f"{name}: a parameter that requires no grad got a .grad"
    if got is None or got.shape != want.shape:
        return f"{name}: .grad is {None if got is None else list(got.shape)}, expected {list(want.shape)}"
    expected = want
    if layout is not None:
        axis = 1 if layout.replace(" ", "") == "[serial,didx]" else 0
        n = want.shape[axis] // world
        expected = torch.zeros_like(want)
        expected.narrow(axis, rank * n, n).copy_(want.narrow(axis, rank * n, n))
    if not torch.allclose(got, expected, **TOL):
        return f"{name}: rank {rank} .grad differs by {(got - expected).abs().max().item():.2e}"
    return None


def check(
    name: str,
    module: torch.nn.Module,
    chunks: int | None,
    pipeline: str,
    x_grad: bool = True,
    params: dict[str, str | None] | None = None,
) -> list[str]:
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)  # the same global tensors on every rank
    x = torch.randn(M, H)
    dy = torch.randn(M, H)
    eager = copy.deepcopy(module)
    xe = x.clone().requires_grad_(x_grad)
    ye = eager(xe)
    ye.backward(dy)
    layout = None if chunks is None else f"[(stream({chunks}), didx), serial]"
    if params is None:
        params = PARAMS if module.fc1.bias is not None else {k: v for k, v in PARAMS.items() if k.endswith("weight")}  # type: ignore[union-attr]
    compiled = hir.compile(module, (x,), [layout], mesh=list(range(world)), param_layouts=params, pipeline=pipeline,
                           training=True)  # fmt: skip
    mine = (rows_of(x, chunks, rank, world) if chunks else x).clone().requires_grad_(x_grad)
    y = compiled(mine)
    failures = []
    want = rows_of(ye.detach(), chunks, rank, world) if chunks else ye.detach()
    if y.shape != want.shape or not torch.allclose(y, want, **TOL):
        failures.append(f"{name}: rank {rank} output differs")
    y.backward(rows_of(dy, chunks, rank, world) if chunks else dy)
    if x_grad:
        gx = rows_of(xe.grad, chunks, rank, world) if chunks else xe.grad
        if mine.grad is None or not torch.allclose(mine.grad, gx, **TOL):
            failures.append(f"{name}: rank {rank} input gradient differs")
    elif mine.grad is not None:
        failures.append(f"{name}: the input, which does not require grad, got a gradient")
    for pname, p in module.named_parameters():
        failure = shard_check(f"{name}: {pname}", p.grad, eager.get_parameter(pname).grad, params.get(pname))
        if failure:
            failures.append(failure)
    # The backward program writes each sharded parameter's gradient into its block of the .grad.
    (step,) = compiled.specializations.cache.values()
    local = step.shard([*module.parameters(), *module.buffers(), mine])
    full = step._full_gradients(local, rank, world)
    written = {j for j, (_, view) in full.items() if view.shape == step._result_shapes[step.gradients[j][1]]}
    sharded = {k for k, primal in enumerate(step.primals) if params.get(primal.name) and step.gradients[k][0] != "none"}
    # The views of the parameters' blocks are made once (the module's tensors have not moved).
    again = step.shard([*module.parameters(), *module.buffers(), mine])
    if any(a is not b for a, b, primal in zip(local, again, step.primals) if primal.is_state):
        failures.append(f"{name}: the parameters' views were made again")
    if set(written) != sharded:
        failures.append(f"{name}: gradients written in place {sorted(written)}, sharded parameters {sorted(sharded)}")
    # Where no block can be the program's destination (the shapes do not agree), the result is
    # copied into it: the same gradients.
    written_in_place = [p.grad.clone() for p in module.parameters() if p.grad is not None]  # type: ignore[union-attr]
    step.__dict__["_result_shapes"] = [torch.Size([-1]) for _ in step._result_shapes]
    for p in module.parameters():
        p.grad = None
    mine.grad = None
    compiled(mine).backward(rows_of(dy, chunks, rank, world) if chunks else dy)
    copied = [p.grad for p in module.parameters() if p.grad is not None]
    if len(copied) != len(written_in_place) or any(not torch.equal(a, b) for a, b in zip(copied, written_in_place)):
        failures.append(f"{name}: the gradients copied into their blocks differ from those written in place")
    del step.__dict__["_result_shapes"]
    # A double backward is refused on every rank, not run without a graph.
    try:
        params = [p for p in module.parameters() if p.requires_grad]
        grads = torch.autograd.grad(compiled(mine).sum(), params, create_graph=True)
        failures.append(f"{name}: create_graph=True gave gradients (requires_grad={grads[0].requires_grad})")
    except RuntimeError as err:
        if "double backward" not in str(err):
            failures.append(f"{name}: create_graph=True failed otherwise: {err}")
    return [f"{pipeline}: {f}" for f in failures]


def layer(norm: str) -> torch.nn.Module:
    """benchmarks/tp_layer.py's TP transformer layer (causal SDPA of 4 heads), norms away from 1 and 0."""
    module = TPLayer(H, 4, FFN, SEQ, torch.float32, "cpu", norm)
    with torch.no_grad():
        for p in (*module.norm1.parameters(), *module.norm2.parameters()):
            p.add_(torch.randn_like(p) * 0.1)
    return module


def layer_cases() -> list[tuple[str, torch.nn.Module, int | None, str, dict[str, str | None]]]:
    """The TP transformer layer and nanoGPT's attention written out (tests/tp_layer_driver.py)."""
    return [
        ("TP layer, LayerNorm, 1 chunk", layer("layer"), 1, "stream-lowering", LAYER_PARAMS),
        ("TP layer, RMSNorm, 2 chunks, copy-engine", layer("rms"), 2, "stream-lowering{backend=copy-engine}",
         LAYER_PARAMS),
        ("TP layer, replicated rows", layer("layer"), None, "stream-lowering", LAYER_PARAMS),
        ("hand-written attention, 2 chunks", HandWrittenAttention(H, 4, SEQ), 2, "stream-lowering", GQA_LAYOUTS),
        ("Llama layer, SDPA with GQA, 2 chunks", LlamaLayer(H, 4, 2, SEQ, True), 2, "stream-lowering", LLAMA_LAYOUTS),
        ("Llama layer written out, 1 chunk", LlamaLayer(H, 4, 2, SEQ, False), 1, "stream-lowering", LLAMA_LAYOUTS),
    ]  # fmt: skip


def layer_loop() -> list[str]:
    """AdamW steps of the TP layer: the loss summed over the ranks' rows tracks eager's."""
    torch.manual_seed(6)
    return loss_curve(layer("rms"), LAYER_PARAMS, "stream-lowering", ("AdamW",), steps=3, what="TP layer")


def optimizer_loop(pipeline: str, optimizers: tuple[str, ...]) -> list[str]:
    """
    A few steps of each optimizer in turn (one compiled module, which the next optimizer trains on
    from where the last left it): the compiled step's loss (summed over the ranks' rows) tracks
    eager's. AdamW's weight decay also moves the entries of the sharded parameters this rank never reads.
    """
    torch.manual_seed(3)
    return loss_curve(MLP(bias=True, residual=True, activation="gelu"), PARAMS, pipeline, optimizers, steps=4)


def loss_curve(
    module: torch.nn.Module, params: dict[str, str | None], pipeline: str, optimizers: tuple[str, ...], steps: int,
    what: str | None = None,
) -> list[str]:  # fmt: skip
    """`steps` steps of each optimizer of `module` compiled on the mesh (rows in 2 chunks) and eagerly: the losses agree."""
    rank, world = dist.get_rank(), dist.get_world_size()
    eager = copy.deepcopy(module)
    chunks = 2
    layout = f"[(stream({chunks}), didx), serial]"
    x, target = torch.randn(M, H), torch.randn(M, H)
    compiled = hir.compile(module, (x,), [layout], mesh=list(range(world)), param_layouts=params, pipeline=pipeline,
                           training=True)  # fmt: skip

    def make(optimizer: str, parameters: object) -> torch.optim.Optimizer:
        if optimizer == "SGD":
            return torch.optim.SGD(parameters, lr=0.1)  # type: ignore[arg-type]
        return torch.optim.AdamW(parameters, lr=1e-2, weight_decay=0.1)  # type: ignore[arg-type]

    failures = []
    for optimizer, step in ((o, step) for o in optimizers for step in range(steps)):
        if step == 0:
            ours, theirs = make(optimizer, module.parameters()), make(optimizer, eager.parameters())
        ours.zero_grad()
        loss = ((compiled(rows_of(x, chunks, rank, world)) - rows_of(target, chunks, rank, world)) ** 2).sum() / M
        loss.backward()
        ours.step()
        # Replicated parameters hold the whole gradient on every rank; the sharded ones this rank's block.
        total = loss.detach().clone()
        dist.all_reduce(total)
        theirs.zero_grad()
        expected = ((eager(x) - target) ** 2).sum() / M
        expected.backward()
        theirs.step()
        if not torch.allclose(total, expected.detach(), rtol=1e-4, atol=1e-6):
            failures.append(
                f"{what or pipeline}: {optimizer} step {step}: loss {total.item():.6f}, eager {expected.item():.6f}"
            )
    return failures


def bf16_step() -> list[str]:
    """In bf16 (as on a GPU): the rows, the input gradient and the weight blocks within bf16 error of eager's."""
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(5)
    module = MLP(bias=True, residual=True, activation="gelu").to(torch.bfloat16)
    eager = copy.deepcopy(module)
    x, dy = torch.randn(M, H, dtype=torch.bfloat16), torch.randn(M, H, dtype=torch.bfloat16)
    xe = x.clone().requires_grad_(True)
    ye = eager(xe)
    ye.backward(dy)
    layout = "[(stream(2), didx), serial]"
    compiled = hir.compile(module, (x,), [layout], mesh=list(range(world)), param_layouts=PARAMS, training=True)
    mine = rows_of(x, 2, rank, world).clone().requires_grad_(True)
    y = compiled(mine)
    y.backward(rows_of(dy, 2, rank, world))
    n = FFN // world
    pairs = {
        "output": (y, rows_of(ye.detach(), 2, rank, world)),
        "input gradient": (mine.grad, rows_of(xe.grad, 2, rank, world)),  # type: ignore[arg-type]
        "fc1.weight": (module.fc1.weight.grad[rank * n : (rank + 1) * n], eager.fc1.weight.grad[rank * n : (rank + 1) * n]),  # type: ignore[index]
        "fc2.weight": (module.fc2.weight.grad[:, rank * n : (rank + 1) * n], eager.fc2.weight.grad[:, rank * n : (rank + 1) * n]),  # type: ignore[index]
        "fc2.bias": (module.fc2.bias.grad, eager.fc2.bias.grad),
    }  # fmt: skip
    failures = []
    for what, (got, want) in pairs.items():
        error = ((got.float() - want.float()).norm() / want.float().norm()).item()  # type: ignore[union-attr]
        if error > 3e-2:
            failures.append(f"bf16: rank {rank} {what} differs by {error:.1e} (relative)")
    return failures


def second_signature() -> list[str]:
    """A call with other rows (M/2) compiles a specialization of its own; both match eager."""
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(4)
    module = MLP(bias=True, residual=True, activation="gelu")
    layout = "[(stream(2), didx), serial]"
    compiled = hir.compile(module, (torch.randn(M, H),), [layout], mesh=list(range(world)), param_layouts=PARAMS,
                           training=True)  # fmt: skip
    failures = []
    for rows in (M, M // 2):
        x = torch.randn(rows, H)
        module.zero_grad()
        mine = rows_of(x, 2, rank, world).clone().requires_grad_(True)
        compiled(mine).sum().backward()
        eager = copy.deepcopy(module)
        eager.zero_grad()
        xe = x.clone().requires_grad_(True)
        eager(xe).sum().backward()
        if not torch.allclose(mine.grad, rows_of(xe.grad, 2, rank, world), **TOL):  # type: ignore[arg-type]
            failures.append(f"second signature: {rows} rows: rank {rank} input gradient differs")
        failure = shard_check(
            f"{rows} rows: fc2.weight", module.fc2.weight.grad, eager.fc2.weight.grad, "[serial, didx]"
        )
        failures += [failure] if failure else []
    if len(compiled.specializations.keys) != 2:
        failures.append(f"second signature: {len(compiled.specializations.keys)} specializations, expected 2")
    # An evaluation batch of a third size under no_grad: its first call compiles it too (traced with
    # grad on), and it runs the forward.
    x = torch.randn(M // 4 if M // 4 >= 2 * world else M, H)
    with torch.no_grad():
        got, want = compiled(rows_of(x, 2, rank, world)), rows_of(module(x), 2, rank, world)
    if not torch.allclose(got, want, **TOL):  # type: ignore[arg-type]
        failures.append(f"second signature: a first call under no_grad: rank {rank} output differs")
    return failures


def gradient_reuse() -> list[str]:
    """
    The full-shaped gradients of the sharded weights: their memory is returned again once the
    `.grad` is set to None (the other ranks' blocks stay zero), never while a `.grad` or another
    reference still holds it (gradient accumulation sums), and zeroed again after an in-place change.
    """
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(6)
    module = MLP(bias=True, residual=True, activation="gelu")
    eager = copy.deepcopy(module)
    layout = "[(stream(2), didx), serial]"
    compiled = hir.compile(module, (torch.randn(M, H),), [layout], mesh=list(range(world)), param_layouts=PARAMS,
                           training=True)  # fmt: skip
    x = torch.randn(M, H)
    dys = [torch.randn(M, H) for _ in range(3)]
    failures: list[str] = []

    def step(dy: torch.Tensor) -> None:
        compiled(rows_of(x, 2, rank, world)).backward(rows_of(dy, 2, rank, world))

    def expected(*grads: torch.Tensor) -> torch.Tensor:
        eager.zero_grad()
        for dy in grads:
            eager(x).backward(dy)
        return eager.fc2.weight.grad.clone()  # type: ignore[union-attr]

    def compare(what: str, want: torch.Tensor) -> None:
        failure = shard_check(f"gradient reuse, {what}: fc2.weight", module.fc2.weight.grad, want, "[serial, didx]")
        failures.extend([failure] if failure else [])

    step(dys[0])
    compare("first step", expected(dys[0]))
    module.fc2.weight.grad.add_(1.0)  # type: ignore[union-attr]  # in place, the zeros included
    module.zero_grad(set_to_none=True)
    step(dys[1])
    compare("after an in-place change", expected(dys[1]))
    address = module.fc2.weight.grad.data_ptr()  # type: ignore[union-attr]
    module.zero_grad(set_to_none=True)
    decoy = torch.empty(H, FFN)  # would take the freed memory of a .grad that was not kept for reuse
    step(dys[2])
    del decoy
    compare("memory reused", expected(dys[2]))
    if module.fc2.weight.grad.data_ptr() != address:  # type: ignore[union-attr]
        failures.append("gradient reuse: the memory of a .grad set to None was not returned again")
    kept = module.fc2.weight.grad
    assert kept is not None
    snapshot = kept.clone()
    module.zero_grad(set_to_none=True)
    step(dys[0])
    compare("a reference kept", expected(dys[0]))
    if not torch.equal(kept, snapshot):
        failures.append("gradient reuse: a gradient the caller still holds was overwritten")
    step(dys[1])  # no zero_grad: autograd adds to the .grad, which must not have been overwritten first
    compare("accumulated", expected(dys[0], dys[1]))
    return failures


def main() -> int:
    dist.init_process_group("gloo")
    torch.manual_seed(0)  # every rank builds the same (global) parameters and shards them
    failures = []
    cases = [
        ("mlp, gelu, 2 chunks", MLP(bias=False, residual=False, activation="gelu"), 2),
        ("mlp with biases and a residual add, silu, 1 chunk", MLP(bias=True, residual=True, activation="silu"), 1),
        ("replicated rows (all-reduce)", MLP(bias=True, residual=False, activation="gelu"), None),
    ]
    # Every case with NCCL per chunk and with the copy-engine pipeline; the copy-engine pipeline by
    # shard (a GPU's usual pick) with rows in one chunk: with rows already in chunks, or replicated,
    # it moves no stream axis and its programs are the copy-engine pipeline's, the same text.
    nccl = "stream-lowering"
    by_shard = "stream-lowering{backend=copy-engine overlap=by-shard}"
    runs = [(p, case) for p in (nccl, "stream-lowering{backend=copy-engine}") for case in cases]
    runs.append((by_shard, cases[1]))
    quick = "--quick" in sys.argv
    if quick:
        mlp = MLP(bias=True, residual=True, activation="gelu")
        runs = [(nccl, ("mlp with biases and a residual add, gelu, 2 chunks", mlp, 2))]
    for pipeline, (name, module, chunks) in runs:
        failures += check(name, copy.deepcopy(module), chunks, pipeline)
    steps = len(runs)
    if not quick:
        # A first layer's input requires no grad (the backward computes no input gradient); ReLU's
        # backward is a `where` with a 0-d constant.
        relu = MLP(bias=True, residual=False, activation="relu")
        failures += check("relu, input without grad", relu, 2, "stream-lowering", x_grad=False)
        failures += check("pre-norm block, LayerNorm", PreNorm("layer"), 2, "stream-lowering")
        failures += check("pre-norm block, RMSNorm", PreNorm("rms"), 1, "stream-lowering")
        # One chunk, fc1 frozen: the forward gathers x whole, and the backward reads x's rows
        # only, so the gathered x is not saved.
        gated = Gated(bias=False, residual=False, activation="gelu")
        gated.fc1.weight.requires_grad_(False)
        failures += check("gated by the input, fc1 frozen, 1 chunk", gated, 1, "stream-lowering")
        failures += second_signature()
        failures += bf16_step()
        failures += gradient_reuse()
        steps += 7
    cases = layer_cases()[:1] if quick else layer_cases()
    for name, module, chunks, pipeline, params in cases:
        failures += check(name, module, chunks, pipeline, params=params)
    steps += len(cases)
    if not quick:
        failures += layer_loop()
    optimizers = ("SGD",) if quick else ("SGD", "AdamW")
    failures += optimizer_loop("stream-lowering", optimizers)
    loops = "/".join(optimizers) + ("" if quick else "/TP layer")
    ports: list[object] = [fresh_ports(2) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(ports)
    verdict = job_verdict(failures, f"training on a mesh: {steps} step checks and the {loops} loops match eager torch")
    return verdict if quick else verdict | benchmark_runs(ports[0])  # type: ignore[arg-type]


def fresh_ports(n: int) -> list[int]:
    """`n` distinct ports free on this machine now."""
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def benchmark_runs(ports: list[int]) -> int:
    """
    benchmarks/tp_mlp_train.py's TP training step (eager TP and one hir variant, checked against
    eager, and timed back to back) for the MLP and the TP transformer layer, in this job (one
    launch of the ranks for both): each run starts and ends a process group of its own, as under
    torchrun, on a port of its own (a rank that connected to the last run's store as it closed
    would wait in the new group for ever). Rank 0 prints `== tp_mlp_train.py --block BLOCK` before
    each run's output.
    """
    import tp_mlp_train

    argv = ["--device", "cpu", "--reps", "1", "--warmup", "0", "--back-to-back"]
    status = 0
    for block, port in zip(("mlp", "layer"), ports):
        os.environ["MASTER_PORT"] = str(port)
        if os.environ["RANK"] == "0":
            print(f"== tp_mlp_train.py --block {block}", flush=True)
        try:
            tp_mlp_train.main([*argv, "--block", block, "--variants", "stream-lowering:2:chunks=2"])
        except SystemExit as done:
            status |= int(done.code != 0)
        sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
