"""The fusion and hir dialects."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_hir_dialects() -> dict[str, Callable[[], Dialect]]:
    """Name -> lazy factory, like `xdsl.dialects.get_all_dialects`."""

    def get_fusion() -> Dialect:
        from hir.dialects.fusion import Fusion

        return Fusion

    def get_hir() -> Dialect:
        from hir.dialects.hir import Hir

        return Hir

    return {"fusion": get_fusion, "hir": get_hir}
