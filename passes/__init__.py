"""Passes over fusion and hir modules."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_hir_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Name -> lazy factory, like `xdsl.transforms.get_all_passes`."""
    return {}
