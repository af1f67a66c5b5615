# lit configuration for hir's FileCheck tests: `lit tests/lit` (hir-opt and filecheck on PATH).
import atexit
import os
import subprocess
import sys
import tempfile

import lit.formats

config.name = "hir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "bin"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PYTHONUNBUFFERED"] = "1"
for var in ("PATH", "HOME", "PYTHONPATH", "CUDA_VISIBLE_DEVICES"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# overlap=auto decides with the built-in device constants, not this machine's calibration cache.
config.environment["HIR_DEVICE_CONSTANTS"] = "builtin"


def start_tool_server() -> None:
    """
    hir-opt and filecheck run in a warm server (tool_server.py) that forks a child per RUN-line
    process instead of importing xDSL anew each time; HIR_LIT_COLD=1 runs plain processes.
    """
    folder = tempfile.mkdtemp(prefix="hir-lit-")
    address = os.path.join(folder, "tools.sock")
    server = subprocess.Popen(
        [sys.executable, os.path.join(config.test_source_root, "tool_server.py"), address, str(os.getpid())],
        stdout=subprocess.PIPE,
        text=True,
    )
    if server.stdout is None or server.stdout.readline().strip() != "ready":
        lit_config.warning("the warm tool server did not start; running every tool as a plain process")
        return

    def stop() -> None:
        server.terminate()
        server.wait()
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)

    atexit.register(stop)
    bin_dir = os.path.join(config.test_source_root, "bin")
    config.environment["PATH"] = bin_dir + os.pathsep + config.environment.get("PATH", "")
    config.environment["HIR_WARM_SOCKET"] = address


if os.environ.get("HIR_LIT_COLD") != "1":
    start_tool_server()

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
