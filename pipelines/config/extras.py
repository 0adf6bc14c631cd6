"""Optional features and the extra that installs each. A setting or command that needs one fails
before any work, naming the `pip install` that gives it, instead of an ImportError deep in a run."""

from __future__ import annotations

from importlib.util import find_spec

# `[release] minari = true` and `turnlake export minari`: Minari writes HDF5 (h5py) and reads
# gymnasium spaces; its storages import PIL.
MINARI_MODULES = ("minari", "gymnasium", "h5py", "PIL")
MINARI_INSTALL = "pip install 'turnlake[minari]' (or `uv sync --extra minari`)"


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    """The top-level modules of `modules` that cannot be imported here (none is imported)."""
    return [name for name in modules if find_spec(name) is None]


def minari_missing() -> str | None:
    """Why Minari datasets cannot be written here, or None when they can."""
    missing = missing_modules(MINARI_MODULES)
    if not missing:
        return None
    names = ", ".join(missing)
    return f"Minari datasets need the `minari` extra ({names} not installed): {MINARI_INSTALL}"
