"""What a split assignment is configured by (`[splits]` in turnlake.toml): salt, ratios,
whether a dialogue rater links the conversations they rated, and the near-duplicate prompt
clusters that share a split (`[splits.near_duplicates]`).

Imports nothing of turnlake, so the settings and the split assignment can both use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

N_BUCKETS = 10_000
SPLIT_ORDER = ("train", "validation", "test")  # bucket ranges are laid out in this order
DEFAULT_SALT = "turnlake-splits-v1"


def _default_ratios() -> dict[str, float]:
    return {"train": 0.8, "test": 0.2}


@dataclass(frozen=True)
class NearDuplicates:
    """`[splits.near_duplicates]`: prompts whose MinHash signatures estimate a Jaccard similarity
    of their `shingle_size`-word shingles of at least `threshold` (`num_perm` permutations in
    `bands` LSH bands) are one cluster, and every split group holding one of its prompts shares
    a split (docs/concepts/near-duplicates.md)."""

    enabled: bool = True
    shingle_size: int = 3
    threshold: float = 0.5
    num_perm: int = 128
    bands: int = 32

    def record(self) -> dict:
        return {
            "enabled": self.enabled,
            "shingle_size": self.shingle_size,
            "threshold": self.threshold,
            "num_perm": self.num_perm,
            "bands": self.bands,
        }


@dataclass(frozen=True)
class SplitConfig:
    """Salt and ratios of the split assignment (`[splits]` in turnlake.toml), and whether a
    dialogue rater is a person that keeps every conversation they rated in one split group."""

    salt: str = DEFAULT_SALT
    ratios: dict[str, float] = field(default_factory=_default_ratios)
    link_raters: bool = True
    near_duplicates: NearDuplicates = field(default_factory=NearDuplicates)

    def __post_init__(self) -> None:
        unknown = set(self.ratios) - set(SPLIT_ORDER)
        if unknown:
            raise ValueError(f"unknown split(s) {sorted(unknown)}: use {', '.join(SPLIT_ORDER)}")
        if any(r < 0 for r in self.ratios.values()) or abs(sum(self.ratios.values()) - 1.0) > 1e-9:
            raise ValueError(f"split ratios must be ≥ 0 and sum to 1, got {self.ratios}")
        if not self.salt:
            raise ValueError("split salt must not be empty")

    def record(self) -> dict:
        """What the split assignment is recorded as in a release's config (and so its content
        hash): `link_raters` only when off, so releases made before the setting existed, and
        with it at its default, keep their content hash."""
        recorded: dict = {"salt": self.salt, "ratios": dict(self.ratios)}
        if not self.link_raters:
            recorded["link_raters"] = False
        recorded["near_duplicates"] = self.near_duplicates.record()
        return recorded

    def bucket_ranges(self) -> dict[str, tuple[int, int]]:
        """Split → [start, end) bucket range, cumulative in SPLIT_ORDER; the last range ends at
        N_BUCKETS."""
        ranges, start = {}, 0
        present = [s for s in SPLIT_ORDER if s in self.ratios]
        for i, split in enumerate(present):
            end = (
                N_BUCKETS
                if i == len(present) - 1
                else start + round(self.ratios[split] * N_BUCKETS)
            )
            ranges[split] = (start, end)
            start = end
        return ranges
