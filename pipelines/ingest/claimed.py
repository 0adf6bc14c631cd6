"""Raw files no adapter reads, without discovering every source again after a build.

An adapter claims a file by its relative path alone (`discover` is glob patterns and a name
filter over the tree), so a path one of this process's ingests discovered under a raw root is
claimed for as long as the code is the same. The build summary asks right after the ingest: only
the paths the ingests did not discover (the unclaimed few, and files added since) are offered to
the adapters again, through `listing.only_among`, instead of walking the tree once per source and
making a handle for each of its 136 k files (~3 s at 1 GB). `status`, in a process that ingested
nothing, offers every path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from pipelines.privacy.optouts import OPTOUTS_FILE
from pipelines.sources import all_adapters, listing
from pipelines.sources import base as source_base
from pipelines.sources.listing import raw_root_exists, root_of, visible
from pipelines.sources.raw_state import one_listing

# (raw root, adapter's discover) → relative paths it discovered there in this process
_DISCOVERED: dict[tuple[str, Callable], set[str]] = {}


def remember(raw_root: Path, discover: Callable, rel_paths: Iterable[str]) -> None:
    """Paths `discover` found under `raw_root` (an ingest's listing), claimed from now on."""
    _DISCOVERED.setdefault((str(raw_root), discover), set()).update(rel_paths)


def unrecognised_files(raw_root: Path, listed: Sequence[str] | None = None) -> list[str]:
    """Raw files (relative paths) that no adapter claims and that are not the consent registry:
    never read, so the build summary and `status` list them instead of ignoring them silently.
    `listed`: every file under the raw root, hidden ones included, as the caller listed them
    (a build: its raw state's), instead of listing the tree again."""
    raw_root = root_of(raw_root)
    with one_listing(raw_root):  # on S3: one listing for every source's and for all files
        if not raw_root_exists(raw_root):
            return []
        discovers = [module.discover for module in all_adapters().values()]
        known = set().union(*(_DISCOVERED.get((str(raw_root), d), ()) for d in discovers))
        known.add(OPTOUTS_FILE.as_posix())
        every = source_base.all_raw_files(raw_root) if listed is None else visible(listed)
        left = [rel for rel in every if rel not in known]
        if not left:
            return []
        with listing.only_among(left):
            claimed = {file.rel_path for discover in discovers for file in discover(raw_root)}
        return [rel for rel in left if rel not in claimed]
