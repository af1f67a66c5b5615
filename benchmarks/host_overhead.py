"""
Host overhead of the hir runtime: microseconds per executed hir op for a stream-pipelined loop of
small launches (an expanded `hir.stream_for`: fork loop + main loop), against the same torch calls written
by hand, on one machine in one run. Then xDSL's own `Interpreter` against our closures on a
straight-line chain of trivial ops (the reason runtime/compiler.py compiles to closures).

    python benchmarks/host_overhead.py                  # CUDA if there is a GPU, else CPU (with a note)
    python benchmarks/host_overhead.py --device cpu --iterations 256 --width 1024 --num-streams 4
    python benchmarks/host_overhead.py --device cuda --cuda-graph   # also the program as a replayed CUDA graph

Each run of the program is timed with perf_counter after a device synchronize: "host" stops when
the call returns (the time the host spends enqueueing), "wall" after a second synchronize (all
work done). Reported: medians over --repeats runs, after --warmup runs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from xdsl.dialects import func
from xdsl.ir import Operation

import hir
from hir.dialects import hir as hir_dialect
from hir.runtime.device import streams_for


def program_text(iterations: int, width: int) -> str:
    """`out = relu(x)` over x[iterations, width], one launch per row on pool stream `i mod num_streams`."""
    row = f"memref<{width}xf32, strided<[1], offset: ?>>"
    whole = f"memref<{iterations}x{width}xf32>"
    return f"""
func.func @main(%x: {whole}) -> {whole} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cn = arith.constant {iterations} : index
  %buf = hir.allocate() : {whole}
  %main = hir.get_current_stream
  %n = hir.num_streams
  hir.for %i = %c0 to %cn step %c1 {{
    %k = arith.remui %i, %n : index
    %s = hir.stream %k
    hir.set_current_stream %s
    hir.synchronize %main
  }}
  hir.for %i = %c0 to %cn step %c1 {{
    %k = arith.remui %i, %n : index
    %s = hir.stream %k
    hir.set_current_stream %s
    %in = hir.alias_select %x[%i] axis 0 : {whole} -> {row}
    %out = hir.alias_select %buf[%i] axis 0 : {whole} -> {row}
    hir.launch ins(%v = %in : {row}) outs(%out : {row}) {{
      %r = fusion.relu %v : tensor<{width}xf32> -> tensor<{width}xf32>
      hir.yield %r : tensor<{width}xf32>
    }}
    hir.set_current_stream %main
    hir.synchronize %s
  }}
  func.return %buf : {whole}
}}
"""


def executed_ops(
    function: func.FuncOp, iterations: int, counted: Callable[[Operation], bool] = lambda op: True
) -> tuple[int, list[int]]:
    """
    Ops one run executes (terminators and launch bodies not counted; of those, the `counted` ones),
    and the ops per loop iteration.
    """
    top = [op for op in function.body.block.ops if not isinstance(op, func.ReturnOp) and counted(op)]
    per_iteration = [
        sum(1 for inner in op.body.block.ops if not isinstance(inner, hir_dialect.YieldOp) and counted(inner))
        for op in top
        if isinstance(op, hir_dialect.ForOp)
    ]
    return len(top) + iterations * sum(per_iteration), per_iteration


def eager(device: torch.device, num_streams: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """
    The same work with the torch calls the runtime makes, written by hand with torch's public API
    (streams from the same pool; a wait is a record of the source stream's own event, created once,
    and a wait for it; the fork records the caller's event once and each worker waits for it once).
    """
    if device.type != "cuda":

        def run_cpu(x: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            for i in range(x.shape[0]):
                torch.clamp_min(x[i], 0, out=out[i])
            return out

        return run_cpu
    pool = [streams_for(device).pool(k) for k in range(num_streams)]
    done = [torch.cuda.Event() for _ in pool]
    main_done = torch.cuda.Event()

    def run_cuda(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        main = torch.cuda.current_stream()
        main_done.record(main)
        for i in range(x.shape[0]):
            stream = pool[i % num_streams]
            torch.cuda.set_stream(stream)
            if i < num_streams:
                stream.wait_event(main_done)
        for i in range(x.shape[0]):
            k = i % num_streams
            stream = pool[k]
            torch.cuda.set_stream(stream)
            torch.clamp_min(x[i], 0, out=out[i])
            torch.cuda.set_stream(main)
            done[k].record(stream)
            main.wait_event(done[k])
        return out

    return run_cuda


@dataclass
class Timing:
    host: list[float]
    """Seconds until the call returned (the host enqueueing), one per repeat."""
    wall: list[float]
    """Seconds until the device was done too."""


def time_interleaved(
    runs: dict[str, Callable[[], object]], device: torch.device, warmup: int, repeats: int
) -> dict[str, Timing]:
    """
    Times each run `repeats` times, taking turns, so that drift of the machine hits all alike.

    Not torch.utils.benchmark.Timer: it times one statement at a time and reports wall time with
    the device synchronized, where this needs the host time until the call returns (the enqueue
    cost, which is what the runtime adds) beside the wall time, and paired samples of the runs
    (`stream_loop` takes the median of per-turn ratios) so that a loaded machine's drift cancels.
    """
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for run in runs.values():
        for _ in range(warmup):
            run()
    timings = {name: Timing([], []) for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            sync()
            start = time.perf_counter()
            run()
            returned = time.perf_counter()
            sync()
            timings[name].host.append(returned - start)
            timings[name].wall.append(time.perf_counter() - start)
    return timings


def median_us(values: list[float], per: int = 1) -> str:
    """`median [p10-p90]` in microseconds, divided by `per`."""
    q = statistics.quantiles(values, n=10)
    digits = 3 if per > 1 else 1
    low, mid, high = (v * 1e6 / per for v in (q[0], statistics.median(values), q[-1]))
    return f"{mid:.{digits}f} [{low:.{digits}f}-{high:.{digits}f}]"


def stream_loop(args: argparse.Namespace, device: torch.device) -> None:
    module = hir.parse(program_text(args.iterations, args.width), "host_overhead.hir.mlir")
    program = hir.compile_program(module)
    ops, per_iteration = executed_ops(program.func, args.iterations)
    x = torch.randn(args.iterations, args.width, device=device)
    by_hand = eager(device, args.num_streams)
    # Correct first: both compute relu(x).
    (out,) = program([x], num_streams=args.num_streams)
    expected = torch.relu(x)
    if not (torch.equal(out, expected) and torch.equal(by_hand(x), expected)):
        raise SystemExit("error: the results differ from torch.relu")

    runs: dict[str, Callable[[], object]] = {
        "hir runtime": lambda: program([x], num_streams=args.num_streams),
        "torch by hand": lambda: by_hand(x),
    }
    if args.cuda_graph:
        runs["hir cuda graph"] = replayed(program, x, args.num_streams, expected)
    timings = time_interleaved(runs, device, args.warmup, args.repeats)
    print(
        f"stream loop: relu over [{args.iterations}, {args.width}] float32, one launch per row, "
        f"num_streams {args.num_streams}; {ops} hir ops executed per run "
        f"({' + '.join(map(str, per_iteration))} per iteration of the fork and main loops, "
        f"{ops - args.iterations * sum(per_iteration)} outside them)"
    )
    print(f"median [p10-p90] of {args.repeats} runs each, taking turns, after {args.warmup} warm-up runs")
    print(f"{'':16}{'host us/run':>26}{'wall us/run':>26}{'host us/hir op':>22}")
    for name, t in timings.items():
        print(f"{name:16}{median_us(t.host):>26}{median_us(t.wall):>26}{median_us(t.host, ops):>22}")
    ours, theirs = timings["hir runtime"], timings["torch by hand"]
    ratio = statistics.median(a / b for a, b in zip(ours.host, theirs.host))
    extra = statistics.median(a - b for a, b in zip(ours.host, theirs.host))
    print(f"ratio hir/hand (host, median of per-turn ratios): {ratio:.2f}")
    print(f"hir overhead over the hand-written calls: {extra * 1e6 / ops:.3f} us per hir op (host)")
    print("('torch by hand' makes the same torch calls without the IR; its us/op divides by the same op count)")
    if args.cuda_graph:
        graph = timings["hir cuda graph"]
        print(
            f"cuda graph replay: {statistics.median(graph.host) * 1e6 / ops:.3f} us per hir op (host), "
            f"{statistics.median(graph.wall) * 1e6 / ops:.3f} (wall); "
            f"{statistics.median(a / b for a, b in zip(ours.host, graph.host)):.1f}x less host time than the runtime"
        )
    if args.profiler:
        under_profiler(runs, program.func, args, device, extra)


def replayed(program: hir.Program, x: torch.Tensor, num_streams: int, expected: torch.Tensor) -> Callable[[], object]:
    """
    The program as a CUDA graph: captured now (and checked), then each call replays it on its
    static input buffer, so the timing holds the replay alone, without copying the input in.
    """
    (out,) = program([x], num_streams=num_streams, cuda_graph=True)
    if not torch.equal(out, expected):
        raise SystemExit("error: the CUDA graph's result differs from torch.relu")
    (captured,) = program.graphs.values()
    static = captured.static_inputs
    return lambda: program(static, num_streams=num_streams, cuda_graph=True)


def under_profiler(
    runs: dict[str, Callable[[], object]],
    function: func.FuncOp,
    args: argparse.Namespace,
    device: torch.device,
    plain_extra: float,
) -> None:
    """
    The same runs while a torch.profiler records: the runtime then puts a range around each hir
    op it runs (runtime/compiler.py), and the profiler records the torch calls of both versions.
    The ranges' cost is how much the hir runtime's lead over the hand-written calls grows.
    """
    from torch.profiler import ProfilerActivity, profile

    ranges = sum(1 for op in function.walk() if op.dialect_name() == "hir" and not isinstance(op, hir_dialect.YieldOp))
    ranged, _ = executed_ops(function, args.iterations, lambda op: op.dialect_name() == "hir")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities):
        timings = time_interleaved(runs, device, args.warmup, args.repeats)
    ours, theirs = timings["hir runtime"], timings["torch by hand"]
    extra = statistics.median(a - b for a, b in zip(ours.host, theirs.host))
    print(f"\nunder torch.profiler: {ranged} op ranges per run ({ranges} hir ops in the program; arith ops get none)")
    print(f"{'':16}{'host us/run':>26}{'wall us/run':>26}")
    for name, t in timings.items():
        print(f"{name:16}{median_us(t.host):>26}{median_us(t.wall):>26}")
    print(f"hir overhead over the hand-written calls: {extra * 1e6 / ranged:.3f} us per op range (host)")
    print(
        f"  of which the ranges: {(extra - plain_extra) * 1e6 / ranged:.3f} us per op range (minus the overhead without)"
    )


def primitives(device: torch.device, repeats: int = 2000) -> None:
    """
    Host cost of each torch call the loop makes, one at a time (where the microseconds go); on
    CUDA, torch's public stream calls next to the `CudaStreams` methods the runtime calls instead:
    a join (the waited-for stream was current just before, so its event is recorded) and a wait
    that repeats the previous one (nothing recorded or waited).
    """
    x = torch.randn(4, 1024, device=device)
    row, out_row = x.select(0, 1), torch.empty_like(x).select(0, 1)
    calls: dict[str, Callable[[], object]] = {
        "x.select(0, i)": lambda: x.select(0, 1),
        "x[i]": lambda: x[1],
        "clamp_min(row, 0, out=row)": lambda: torch.clamp_min(row, 0, out=out_row),
    }
    if device.type == "cuda":
        streams = streams_for(device)
        main, side = streams.current(), streams.pool(0)
        event = torch.cuda.Event()

        def torch_join() -> None:  # a main-loop join, as torch's public API makes it
            torch.cuda.set_stream(side)
            torch.cuda.set_stream(main)
            main.wait_stream(side)

        def runtime_join() -> None:  # the same join through the runtime's streams
            streams.set_current(side)
            streams.set_current(main)
            streams.wait_for(side)

        calls |= {
            "torch.cuda.current_stream()": torch.cuda.current_stream,
            "streams_for(device).current()": lambda: streams_for(device).current(),
            "torch.cuda.set_stream(main)": lambda: torch.cuda.set_stream(main),
            "CudaStreams.set_current(main)": lambda: streams.set_current(main),
            "main.wait_stream(side)": lambda: main.wait_stream(side),
            "current_stream().wait_stream": lambda: torch.cuda.current_stream().wait_stream(side),
            "event.record(side); main.wait_event": lambda: (event.record(side), main.wait_event(event)),
            "join: set_stream x2, wait_stream": torch_join,
            "join: CudaStreams set_current x2, wait_for": runtime_join,
            "CudaStreams.wait_for(side) again: skipped": lambda: streams.wait_for(side),
        }
    print("\nhost cost of single torch calls (median of 5 batches):")
    for name, call in calls.items():

        def batch(call: Callable[[], object] = call) -> None:
            for _ in range(repeats):
                call()

        seconds = statistics.median(time_interleaved({name: batch}, device, 1, 5)[name].host)
        print(f"  {name:44}{seconds * 1e6 / repeats:8.3f} us")


def interpreter_chain(length: int, repeats: int) -> None:
    """xDSL's Interpreter against our closures on `length` chained arith.addi (CPU, no torch work)."""
    from xdsl.interpreter import Interpreter
    from xdsl.interpreters.arith import ArithFunctions
    from xdsl.interpreters.func import FuncFunctions

    lines = ["func.func @main() -> index {", "  %c1 = arith.constant 1 : index", "  %v0 = arith.constant 0 : index"]
    lines += [f"  %v{i + 1} = arith.addi %v{i}, %c1 : index" for i in range(length)]
    lines += [f"  func.return %v{length} : index", "}"]
    module = hir.parse("\n".join(lines), "chain.mlir")
    interpreter = Interpreter(module)
    interpreter.register_implementations(ArithFunctions())
    interpreter.register_implementations(FuncFunctions())
    program = hir.compile_program(module)
    if interpreter.call_op("main", ()) != (length,) or program([]) != [length]:
        raise SystemExit("error: the chain computed a wrong sum")
    ops = length + 3  # constants, adds, return
    cpu = torch.device("cpu")
    timings = time_interleaved(
        {"xdsl": lambda: interpreter.call_op("main", ()), "ours": lambda: program([])}, cpu, 1, repeats
    )
    xdsl, ours = (statistics.median(timings[name].host) for name in ("xdsl", "ours"))
    print(f"\nstraight-line chain of {length} arith.addi on CPU (median of {repeats}):")
    print(f"{'xDSL Interpreter':22}{xdsl * 1e6 / ops:8.3f} us/op")
    print(f"{'hir closure runtime':22}{ours * 1e6 / ops:8.3f} us/op")
    print(f"{'ratio xDSL/hir':22}{xdsl / ours:8.1f}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda if available")
    p.add_argument("--iterations", type=int, default=256, help="main-loop iterations (rows)")
    p.add_argument("--width", type=int, default=1024, help="elements per row")
    p.add_argument("--num-streams", type=int, default=4)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--repeats", type=int, default=50)
    p.add_argument("--chain", type=int, default=10_000, help="length of the interpreter comparison (0: skip)")
    p.add_argument("--profiler", action="store_true", help="also time the stream loop while torch.profiler records")
    p.add_argument(
        "--cuda-graph", action="store_true", help="also time the program replayed as a CUDA graph (GPU only)"
    )
    return p


def main() -> None:
    args = build_parser().parse_args()
    name = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if args.cuda_graph and device.type != "cuda":
        raise SystemExit("error: --cuda-graph needs --device cuda (CUDA graphs need a GPU)")
    if device.type == "cuda":
        print(f"device: {torch.cuda.get_device_name(device)}, torch {torch.__version__}")
    else:
        print(f"device: CPU ({torch.get_num_threads()} threads), torch {torch.__version__}")
        print("note: no GPU: streams are no-ops, so this measures the closures and the CPU kernels only")
    stream_loop(args, device)
    primitives(device)
    if args.chain:
        interpreter_chain(args.chain, repeats=11)


if __name__ == "__main__":
    main()
