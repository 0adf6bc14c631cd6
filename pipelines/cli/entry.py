"""The `turnlake` console script: allocator settings first, then the command line.

Nothing here may import Polars or pyarrow before `apply_defaults` (they read their allocator
settings when first used); `pipelines.cli.main` imports them, so it is imported after.
"""

from __future__ import annotations

from pipelines.runtime.allocators import apply_defaults
from pipelines.runtime.collector import collect_less


def main(argv: list[str] | None = None) -> int:
    apply_defaults()
    collect_less()
    from pipelines.cli.main import main as cli_main

    return cli_main(argv)
