"""hir: stream- and device-parallel tensor programs lowered to host programs, on xDSL + PyTorch."""
