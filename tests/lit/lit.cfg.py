# lit configuration for hir's FileCheck tests: `lit tests/lit` (hir-opt, hir-run, filecheck on PATH).
import os

import lit.formats

config.name = "hir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PYTHONUNBUFFERED"] = "1"
for var in ("PATH", "HOME", "PYTHONPATH", "CUDA_VISIBLE_DEVICES"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

# Longer names first: lit substitutes plain substrings in list order.
config.substitutions.append(
    (
        "HIR_GENERIC_ROUNDTRIP",
        "hir-opt %s --split-input-file --print-op-generic | hir-opt --split-input-file | filecheck %s",
    )
)
config.substitutions.append(
    ("HIR_ROUNDTRIP", "hir-opt %s --split-input-file | hir-opt --split-input-file | filecheck %s")
)
