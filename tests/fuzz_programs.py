"""
Reproduce a fuzzer failure, or look at generated programs (docs/testing.md, "Differential fuzzer";
the generators and checks live in tests/fuzz/).

    python tests/fuzz_programs.py repro.mlir --num-streams 3 --policy resharding-only --seed 7 \\
        [--layouts transposed,strided] [--outputs none,strided] [--may-reject]
    python tests/fuzz_programs.py --sample 5                     # single-device programs
    python tests/fuzz_programs.py --sample 5 --world-size 2      # programs over meshes of 2 devices

A multi-device failure is reproduced under torchrun with the driver the fuzzer prints, e.g.

    python -m torch.distributed.run --nproc-per-node 2 tests/fuzz/driver.py repro.mlir \\
        --pipeline 'stream-lowering{backend=copy-engine}' --num-streams 3 --seed 7
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz.check import LAYOUTS, OUTPUT_LAYOUTS, POLICIES, LoweringMismatch, RunOptions, check_lowering, failure_report


def _layouts(text: str, choices: Sequence[str]) -> tuple[str, ...]:
    layouts = tuple(text.split(",")) if text else ()
    for layout in layouts:
        if layout not in choices:
            raise argparse.ArgumentTypeError(f"unknown layout '{layout}', expected one of {', '.join(choices)}")
    return layouts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", help="a fusion-level program to check (e.g. a fuzzer failure)")
    parser.add_argument("--num-streams", type=int, default=4)
    parser.add_argument("--policy", choices=POLICIES, default=POLICIES[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--layouts", type=lambda t: _layouts(t, LAYOUTS), default=(), help="per input, comma-separated")
    parser.add_argument(
        "--outputs", type=lambda t: _layouts(t, OUTPUT_LAYOUTS), default=(), help="per preallocated output"
    )
    parser.add_argument("--may-reject", action="store_true", help="a diagnosed refusal to lower is fine")
    parser.add_argument("--sample", type=int, metavar="N", help="print N generated programs instead")
    parser.add_argument("--world-size", type=int, default=1, help="with --sample: programs over 2 or 4 devices")
    args = parser.parse_args(argv)
    if args.sample:
        from fuzz.multidevice import multidevice_programs
        from fuzz.programs import fusion_programs

        strategy = fusion_programs() if args.world_size == 1 else multidevice_programs(args.world_size)
        for _ in range(args.sample):
            print(strategy.example().text)
        return 0
    if not args.file:
        parser.error("give a FILE or --sample N")
    text = Path(args.file).read_text()
    options = RunOptions(args.num_streams, args.policy, args.seed, args.layouts, args.outputs)
    try:
        lowered = check_lowering(text, options, may_reject=args.may_reject)
    except LoweringMismatch as err:
        print(err)
        return 1
    if lowered is None:
        print("OK: stream-lowering refused the program with a diagnostic")
        return 0
    print(failure_report(text, str(lowered), "OK: the lowered program matches the reference", options))
    return 0


if __name__ == "__main__":
    sys.exit(main())
