"""The dataset card's Hugging Face YAML metadata and its warnings, from the released frames.

Metadata follows the Hub's dataset-card spec (huggingface/hub-docs `datasetcard.md`):
`pretty_name`, `language`, `license` (+ `license_name` / `license_link` for `other`),
`task_categories`, `size_categories`, `configs` (one `default`), and `dataset_info` with the
features and split sizes of every config, in the YAML form `datasets` writes
(`Features._to_yaml_list`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import polars as pl
import pyarrow as pa
import yaml

from pipelines.release.build.card_stats import FrameStats, stats_of
from pipelines.splits.balance import TOLERANCE, off_ratio

TASK_CATEGORIES = ["text-generation", "reinforcement-learning"]
TAGS = ["sft", "dpo", "kto", "prm", "offline-rl", "rlds", "human-feedback"]
_SIZE_EDGES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
)
_ARROW_NAMES = {"double": "float64", "float": "float32", "halffloat": "float16"}


@dataclass(frozen=True)
class Config:
    """One Hugging Face config of a release: its folder, dataset and rows (with `split`)."""

    name: str
    path: str  # folder under the release
    dataset: str
    frame: (
        pl.DataFrame | FrameStats
    )  # its rows, or what the card needs of them (build/card_stats.py)
    splits: tuple[str, ...]  # in file order

    @cached_property
    def stats(self) -> FrameStats:
        return stats_of(self.frame)


def size_category(rows: int) -> str:
    return next((label for edge, label in _SIZE_EDGES if rows < edge), "n>1B")


def _feature(dtype: pa.DataType) -> dict:
    for kind, test in (("large_list", pa.types.is_large_list), ("list", pa.types.is_list)):
        if test(dtype):
            inner = _feature(dtype.value_type)
            return {kind: inner.get("dtype") or inner.get("struct") or inner}
    if pa.types.is_struct(dtype):
        return {"struct": [{"name": f.name, **_feature(f.type)} for f in dtype]}
    return {"dtype": _ARROW_NAMES.get(str(dtype), str(dtype))}


def hf_features(schema: pa.Schema) -> list[dict]:
    """An Arrow schema as `dataset_info.features` (what `datasets` would infer and write)."""
    return [{"name": field.name, **_feature(field.type)} for field in schema]


def loadable_splits(config: Config) -> tuple[str, ...]:
    """The splits the card's `configs` and `dataset_info` list: those with rows, or every split of
    a config without any. Every split has its files (staged.py), but `datasets` (5.x) cannot
    materialize a split of 0 rows: one listed makes `load_dataset(release, config)` fail as a
    whole ("Instruction … corresponds to no data", huggingface/datasets PR #8401), so an empty
    split of a config with rows is left to the files, `streaming=True` and `load_release`. A config
    without rows is still listed, so its name is known and it streams as 0 rows."""
    rows = config.stats.rows
    with_rows = tuple(split for split in config.splits if rows.get(split, 0))
    return with_rows or config.splits


def _dataset_info(config: Config, stats: FrameStats) -> dict:
    splits = [
        {
            "name": split,
            "num_bytes": stats.bytes.get(split, 0),
            "num_examples": stats.rows.get(split, 0),
        }
        for split in loadable_splits(config)
    ]
    return {
        "config_name": config.name,
        "features": hf_features(stats.arrow_schema),
        "splits": splits,
        "dataset_size": sum(s["num_bytes"] for s in splits),
    }


def card_metadata(configs: list[Config], card: dict, default: str | None) -> dict:
    """The YAML front matter as a dict (`card`: `[release.card]` as recorded in the config)."""
    stats = [c.stats for c in configs]
    base_rows = sum(s.height for c, s in zip(configs, stats, strict=True) if c.name == c.dataset)
    meta: dict = {
        "pretty_name": card.get("pretty_name", "turnlake training sets"),
        "language": list(card.get("language", ["en"])),
        "license": card.get("license", "other"),
    }
    if meta["license"] == "other":
        meta["license_name"] = card.get("license_name", "turnlake-source-data")
        meta["license_link"] = card.get("license_link", "LICENSE")
    meta |= {
        "task_categories": TASK_CATEGORIES,
        "tags": TAGS,
        "size_categories": [size_category(base_rows)],
        "configs": [
            {
                "config_name": c.name,
                **({"default": True} if c.name == default else {}),
                "data_files": [
                    {"split": split, "path": f"{c.path}/{split}*.parquet"}
                    for split in loadable_splits(c)
                ],
            }
            for c in configs
        ],
        "dataset_info": [_dataset_info(c, s) for c, s in zip(configs, stats, strict=True)],
    }
    return meta


def front_matter(meta: dict) -> str:
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---"


def card_warnings(configs: list[Config], card: dict, ratios: dict[str, float]) -> list[str]:
    """What a trainer should know before trusting a config: empty configs and splits (present,
    with their columns, but without rows), tiny splits, preference pairs without a reward margin,
    skewed KTO labels (thresholds: `[release.card]`)."""
    tiny = int(card.get("tiny_split_rows", 50))
    out = []
    for c in configs:
        stats = c.stats
        if stats.height == 0:
            out.append(
                f"`{c.name}` is empty: no rows in this release. Its config, files and columns are "
                "here as in every release: it queries and streams as 0 rows (`datasets` cannot "
                "materialize a split of 0 rows without `streaming=True`)."
            )
            continue
        for split in [s for s, r in ratios.items() if r > 0]:
            rows = stats.rows.get(split, 0)
            groups = len(stats.groups.get(split, ())) if "group_id" in stats.schema else 0
            if rows == 0:
                out.append(
                    f"`{c.name}` has no `{split}` rows: its `{split}` file is empty (not in "
                    "the card's `configs`: `datasets` cannot load a split of 0 rows)."
                )
            elif rows < tiny:
                out.append(
                    f"`{c.name}` `{split}` is tiny: {rows} rows from {groups} group(s) "
                    f"(under {tiny}); scores on it are noise."
                )
        out += _ratio_warning(c, stats, ratios, tiny)
        out += _margin_warning(c, stats, float(card.get("missing_margin_share", 0.5)))
        out += _skew_warnings(c, stats, float(card.get("label_skew", 0.9)))
    return out


def _ratio_warning(c: Config, stats: FrameStats, ratios: dict[str, float], tiny: int) -> list[str]:
    """A config (of at least 4 × `tiny_split_rows` rows) whose split shares are far from the
    ratios: splits take whole groups, and a group of people linked by shared raters or actors can
    hold most of a source (pipelines/splits/balance.py)."""
    if stats.height < 4 * tiny:
        return []
    off = off_ratio(stats.rows, ratios, TOLERANCE)
    if not off:
        return []
    warning = (
        f"`{c.name}` splits are off their ratios: {', '.join(off)} of {stats.height} rows. A "
        "split takes whole groups, and people shared across episodes (a rater of many "
        "conversations, one actor in many sessions) join them into large groups; "
        "`turnlake sql --saved split_balance` shows each source's largest group."
    )
    return [warning]


def _margin_warning(c: Config, stats: FrameStats, share: float) -> list[str]:
    if c.dataset != "preference" or stats.height == 0:
        return []
    missing = stats.missing_margin
    if missing / stats.height <= share:
        return []
    return [
        (
            f"`{c.name}`: {missing} of {stats.height} preference pairs carry no reward margin "
            "(`reward_chosen` or `reward_rejected` is null): their preference rests on the pair's "
            "evidence alone (`pair_kind`), not on rewards."
        )
    ]


def _skew_warnings(c: Config, stats: FrameStats, skew: float) -> list[str]:
    if "label" not in stats.schema:
        return []
    out = []
    for split in c.splits:
        n, trues = stats.labels.get(split, (0, 0))
        if n == 0:
            continue
        top = max(trues, n - trues)
        if top / n > skew:
            out.append(
                f"`{c.name}` `{split}` labels are skewed: {trues} true, "
                f"{n - trues} false (majority over {skew:.0%})."
            )
    return out
