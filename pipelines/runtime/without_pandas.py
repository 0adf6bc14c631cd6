"""Imported first by the worker pool's forkserver (pipelines/runtime/workers.py): pandera, imported
as if pandas were not installed.

Nothing turnlake runs in a worker uses pandas, but pandera imports it whenever it is installed
(turnlake's dev group installs it, and so do many users' environments): ~1.3 s of CPU and ~50 MB
of the forkserver's memory, which every worker shares, at each start of a pool whose tasks import
pandera (measured on the 2-core benchmark machine). pandera supports environments without pandas
(its Polars API alone) and decides which it is in once, when it is imported. pandas is hidden for
that import only: a worker may still import it (the main script a worker runs again may).
Nothing else imports this module: the process that starts the workers keeps its pandera whole."""

from __future__ import annotations

import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec


class PandasNotInstalled(MetaPathFinder):
    """Finds pandas and its submodules nowhere, as Python does where it is not installed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            # The message pandera takes for "pandas is not installed" (pandera/__init__.py).
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if "pandas" not in sys.modules:
    _hidden = PandasNotInstalled()
    sys.meta_path.insert(0, _hidden)
    try:
        import pandera  # noqa: F401
    finally:
        sys.meta_path.remove(_hidden)
