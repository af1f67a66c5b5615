"""
pyproject.toml lists hir's packages by hand (the folders map onto hir.*): a new subpackage missing
from the list imports in an editable install, which finds it by path, and is absent from a wheel.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_every_package_is_listed() -> None:
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir: dict[str, str] = setuptools["package-dir"]
    listed = set(setuptools["packages"])
    top_level = [name for name in package_dir if name != "hir"]
    found = {"hir"}
    for name in top_level:
        root = REPO / package_dir[name]
        for init in root.rglob("__init__.py"):
            relative = init.parent.relative_to(root).parts
            found.add(".".join([name, *relative]))
    assert found - listed == set(), f"packages missing from pyproject.toml: {sorted(found - listed)}"
    assert listed - found == set(), f"listed packages without an __init__.py: {sorted(listed - found)}"
