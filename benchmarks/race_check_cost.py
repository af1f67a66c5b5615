"""
Cost of the race checker: the host overhead program (`relu` of one row per launch on pool stream
`i mod num_streams`, fork loop + main loop) run with and without `race_check`, for growing
numbers of iterations. The checked run should stay a constant factor slower (linear in the
number of accesses).

    python benchmarks/race_check_cost.py                        # CPU
    python benchmarks/race_check_cost.py --device cuda --iterations 64 256
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from host_overhead import program_text

import hir


def median_ms(program: hir.Program, x: torch.Tensor, num_streams: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        if x.is_cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        program([x], num_streams=num_streams)
        if x.is_cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--iterations", type=int, nargs="+", default=[16, 64, 256, 1024])
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--num-streams", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=7)
    return parser


def main() -> None:
    args = build_parser().parse_args()
    print(f"{'iterations':>10} {'hir ops':>8} {'plain ms':>9} {'checked ms':>11} {'ratio':>6} {'us/access':>10}")
    for n in args.iterations:
        text = program_text(n, args.width)
        x = torch.randn(n, args.width, device=args.device)
        plain = hir.compile_program(hir.parse(text))
        checked = hir.compile_program(hir.parse(text), race_check=True)
        for program in (plain, checked):  # warm-up: stream pool, allocator
            program([x], num_streams=args.num_streams)
        t_plain = median_ms(plain, x, args.num_streams, args.repeats)
        t_checked = median_ms(checked, x, args.num_streams, args.repeats)
        ops = 8 + 12 * n  # 4 per fork-loop iteration, 8 per main-loop iteration, 8 outside
        per_access = (t_checked - t_plain) * 1e3 / (2 * n)  # a launch reads a row and writes a row
        print(f"{n:>10} {ops:>8} {t_plain:>9.2f} {t_checked:>11.2f} {t_checked / t_plain:>6.1f} {per_access:>10.1f}")


if __name__ == "__main__":
    main()
