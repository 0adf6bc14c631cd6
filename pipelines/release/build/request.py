"""What a release is made of: the datasets and everything the manifest and card say about them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.release.build.card_stats import FrameStats
    from pipelines.release.build.staged import Staged


@dataclass(frozen=True)
class ReleaseRequest:
    staged: Staged  # the datasets' files, already written batch by batch (staged.py)
    proof: dict
    config: dict  # reward rules, split salt and ratios, anything else that shaped the data
    raw_fingerprints: list[dict]  # {"source", "file", "fingerprint"} of every raw file used
    package_version: str
    git_commit: str
    redaction_ledger: dict[str, dict[str, int]] | None = (
        None  # dataset -> kind -> count (no values)
    )
    table_versions: dict[str, dict[str, int]] | None = (
        None  # layer -> table -> Delta version read (pipelines/storage/tables.py); not content
    )
    as_of: str | None = None  # built from the tables as of this time (not LATEST); not content
    # Krippendorff's alpha per score name (gold/agreement.py rows); not content
    agreement: list[dict] | None = None

    def dataset_names(self) -> list[str]:
        return sorted(self.staged.names)

    def stats(self, name: str) -> FrameStats:
        """What the card needs of a dataset's rows."""
        return self.staged.stats[name]
