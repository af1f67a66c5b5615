"""
The differential fuzzer of the lowering (docs/testing.md, "Differential fuzzer").

    values.py       what the generators know about a value; element types; `FuzzProgram`
    builder.py      the op builders shared by the generators
    programs.py     `fusion_programs()`: random single-device programs
    multidevice.py  `multidevice_programs()`: random programs over meshes of 2 or 4 devices
    mesh_rules.py   which reshardings stream-lowering lowers, as the generator predicts them
    check.py        `check_lowering`: the single-device differential check
    driver.py       the torchrun job that checks a batch of multi-device programs on every rank
    mutations.py    textual mutations of valid programs, and hir-opt run in process on them
    profiles.py     hypothesis profiles (ci, long), and drawing a batch of examples at once

Tests: tests/test_fuzz_stream_lowering.py, tests/test_fuzz_multidevice.py,
tests/test_fuzz_invalid_input.py. Reproduce a failure with tests/fuzz_programs.py.
"""
