"""
hir's CUDA graphs and torch.compile(mode="reduce-overhead")'s in one process, on one GPU:
tests/test_cuda_graph.py::test_graphs_beside_torch_compiles_graphs runs it in a process of its own
(an illegal memory access would end the process that makes it).

Three hir compilations of a GPT block (one per segmentation policy, in the default mode: captured
in a graph of its own at the first call) and a torch.compile'd copy of the block are called in
turn, four rounds, with a synchronize after each call; every result is compared with eager's. torch.compile's CUDA graph trees drop
cuBLAS's workspaces around each recording: a hir graph whose GEMMs had captured a workspace that
an eager run allocated then wrote into memory that other tensors had taken (an illegal memory
access at the third round, before hir captured its GEMMs' workspaces in the graph's own pool).
Prints `OK <largest relative error>`.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import torch

import hir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import segment_policies


def main() -> int:
    torch.manual_seed(0)
    make, args = segment_policies.cases("cuda", torch.bfloat16)["gpt"]
    with torch.device("cuda"):
        block = make().to(torch.bfloat16).eval()
    runs = {}
    with torch.no_grad():
        for policy in segment_policies.POLICIES:  # the default mode: captured (and measured) at the first call
            runs[policy] = hir.compile(copy.deepcopy(block), args, policy=policy)
            runs[policy](*args)
    runs["torch.compile"] = torch.compile(copy.deepcopy(block), mode="reduce-overhead")
    worst = 0.0
    with torch.no_grad():
        expected = block(*args).float()
        for _ in range(4):
            for name, fn in runs.items():
                got = fn(*args).float()
                torch.cuda.synchronize()
                error = ((got - expected).norm() / expected.norm()).item()
                if not error <= segment_policies.WRONG:
                    print(f"WRONG {name}: relative error {error:.2e}")
                    return 1
                worst = max(worst, error)
    print(f"OK {worst:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
