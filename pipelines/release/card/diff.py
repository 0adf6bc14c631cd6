"""What changed between two releases: rows added / removed / changed / moved in per dataset and
split (by each dataset's row identity, not by counts), groups that moved split (must be none: splits
are a pure function of the group), reward and label distribution shift, config, code and raw-file
changes.

`turnlake diff V1 V2` prints it as Markdown (changelog.py); a new release's card carries that as
its changelog."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.release.build.row_ids import ROW_ID
from pipelines.release.card.profiles import REWARD_COLUMN
from pipelines.release.store.files import read_manifest

QUANTILES = (0.1, 0.5, 0.9)
# the manifest fields naming the code; `engine_digest` changes with any code or dependency change
CODE_FIELDS = ("package_version", "git_commit", "schema_version", "engine_digest")
_CONTENT_SEEDS = (0x64696666, 0x636F6E74656E74)  # two 64-bit row hashes: a 128-bit digest


@dataclass(frozen=True)
class ReleaseDiff:
    """What changed from release `old` to release `new` (see the module doc)."""

    old: str
    new: str
    rows: list[dict] = field(default_factory=list)  # dataset, split, before, after, added, …
    moved_groups: list[dict] = field(default_factory=list)  # group_id, old_split, new_split
    rewards: list[dict] = field(default_factory=list)  # dataset, column, release, n, mean, …
    labels: list[dict] = field(default_factory=list)  # dataset, label, before, after
    config: list[dict] = field(default_factory=list)  # key, before, after
    code: list[dict] = field(default_factory=list)  # field, before, after
    raw_files: dict[str, int] = field(default_factory=dict)  # added, removed, changed


def _datasets(
    folder: Path,
    read: dict,
    sha256: dict[str, str] | None = None,
    unchanged: frozenset[tuple[str, str]] = frozenset(),
    only: set[str] | None = None,
) -> dict[str, pl.DataFrame]:
    """The key frames (`keyed_file`) of the release's base datasets (top-level folders of Parquet
    files; profiles are subsets, the OpenAI files the same rows as JSONL), read one file at a
    time: a diff holds a few columns per row, never two whole releases. A file is read once per
    diff: a release hard-links the files it shares with the one before. A file in `unchanged`
    (dataset, its `sha256` by path: the other release has a file of these bytes) is read without
    its content (`_unchanged_keys`). `only`: just these datasets."""
    sha256 = sha256 or {}
    out = {}
    for d in sorted(folder.iterdir()):
        if only is not None and d.name not in only:
            continue
        files = sorted(d.glob("*.parquet")) if d.is_dir() else []
        if files:
            out[d.name] = pl.concat(
                [
                    _unchanged_keys(d.name, f, digest)
                    if (digest := sha256.get(f"{d.name}/{f.name}"))
                    and (d.name, digest) in unchanged
                    else _keyed_once(d.name, f, read)
                    for f in files
                ]
            )
    return out


def _unchanged_keys(dataset: str, file: Path, sha256: str) -> pl.DataFrame:
    """`keyed_file` of a file both releases hold (same bytes), but for `_content`: a stand-in
    naming the file's bytes and the row's place in it, the same in both releases. While each
    release's ids are unique, a row of such a file is matched to itself alone, equal, so the
    stand-in counts as its content would (`diff_folders` checks that, else reads the files)."""
    columns = pl.read_parquet_schema(file)
    ident = [c for c in row_identity(dataset) if c in columns]
    extra = [c for c in ("group_id", REWARD_COLUMN.get(dataset), "label") if c in columns]
    frame = pl.read_parquet(file, columns=list(dict.fromkeys(["split", *ident, *extra])))
    key = (
        pl.concat_str([pl.col(c).cast(pl.String).fill_null("") for c in ident], separator="|")
        if ident
        else pl.lit("")
    )
    place = pl.lit(f"={sha256}:") + pl.int_range(pl.len()).cast(pl.String)
    return frame.select("split", *dict.fromkeys(extra), _id=key, _content=place)


def _keyed_once(dataset: str, file: Path, read: dict) -> pl.DataFrame:
    stat = file.stat()
    inode = (stat.st_dev, stat.st_ino)
    if inode not in read:
        read[inode] = keyed_file(dataset, pl.read_parquet(file))
    return read[inode]


def row_identity(dataset: str) -> tuple[str, ...]:
    """The columns that name one row of a dataset across releases: the row ids the release
    orders by (row_ids.ROW_ID); an rl_steps row is one step of an episode."""
    return ("episode_id", "step") if dataset == "rl_steps" else ROW_ID.get(dataset, ())


def keyed_file(dataset: str, frame: pl.DataFrame) -> pl.DataFrame:
    """What the diff reads of each row of one file: split, _id (row identity), _content (a digest
    of the schema and of everything but the split: equal rows, equal digests) and the group,
    reward and label columns. Per file, so the frames of a dataset's files are simply
    concatenated (`_keyed` then applies the rules that need all of them)."""
    columns = [c for c in row_identity(dataset) if c in frame.columns]
    ident = (
        pl.concat_str([pl.col(c).cast(pl.String).fill_null("") for c in columns], separator="|")
        if columns
        else pl.lit("")
    )
    body = frame.drop("split")
    schema = _schema_digest(body)
    hashes = [body.hash_rows(seed).cast(pl.String) for seed in _CONTENT_SEEDS]
    content = pl.concat_str([pl.lit(schema), *(pl.lit(h) for h in hashes)], separator=":")
    extra = [c for c in ("group_id", REWARD_COLUMN.get(dataset), "label") if c in frame.columns]
    return frame.select("split", *dict.fromkeys(extra), _id=ident, _content=content)


def _schema_digest(frame: pl.DataFrame) -> str:
    text = "\0".join(f"{c}\0{t}" for c, t in frame.schema.items())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _keyed(dataset: str, frame: pl.DataFrame) -> pl.DataFrame:
    """A dataset's rows (or the key frames of its files) with one row per identity: where `_id`
    is not an identity of this dataset (repeated), a row is its content."""
    if "_content" not in frame.columns:
        frame = keyed_file(dataset, frame)
    keyed = frame.select("split", "_id", "_content")
    if keyed["_id"].n_unique() < keyed.height:
        keyed = keyed.with_columns(_id=pl.col("_id") + "|" + pl.col("_content"))
    return keyed.unique(subset="_id", keep="first", maintain_order=True)


def row_changes(dataset: str, old: pl.DataFrame | None, new: pl.DataFrame | None) -> list[dict]:
    """Per split (`old`, `new`: the rows, or their key frames, `keyed_file`): rows before and
    after, added (in the new split), removed (from the old split), changed (same identity, other
    content), moved in (same identity, another split before: its group was renamed, by an earlier
    unit that joined it or by a merge with another group, so it is not among `moved_groups`)."""
    empty = pl.DataFrame(schema={"split": pl.String, "_id": pl.String, "_content": pl.String})
    a = _keyed(dataset, old) if old is not None else empty
    b = _keyed(dataset, new) if new is not None else empty
    joined = a.join(b, on="_id", how="full", coalesce=True, suffix="_new")
    old_split, new_split = pl.col("split"), pl.col("split_new")
    # one pass per side instead of a filter per split and figure: at 1 GB a 1 % release's
    # changelog joins ~1 M ids
    into = (
        joined.filter(new_split.is_not_null())
        .group_by(new_split.alias("split"))
        .agg(
            after=pl.len(),
            added=old_split.is_null().sum(),
            changed=(pl.col("_content") != pl.col("_content_new")).fill_null(False).sum(),
            moved_in=(old_split != new_split).fill_null(False).sum(),
        )
    )
    out_of = (
        joined.filter(old_split.is_not_null())
        .group_by("split")
        .agg(before=pl.len(), removed=new_split.is_null().sum())
    )
    figures = out_of.join(into, on="split", how="full", coalesce=True).fill_null(0)
    order = ["before", "after", "added", "removed", "changed", "moved_in"]
    return [
        {"dataset": dataset, "split": row["split"], **{k: int(row[k]) for k in order}}
        for row in figures.sort("split").iter_rows(named=True)
    ]


def moved_groups(old: dict[str, pl.DataFrame], new: dict[str, pl.DataFrame]) -> list[dict]:
    def groups(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
        parts = [f.select("group_id", "split") for f in frames.values() if "group_id" in f.columns]
        schema = {"group_id": pl.String, "split": pl.String}
        return pl.concat(parts).unique() if parts else pl.DataFrame(schema=schema)

    joined = groups(old).join(groups(new), on="group_id", suffix="_new")
    moved = joined.filter(pl.col("split") != pl.col("split_new")).sort("group_id")
    return moved.rename({"split": "old_split", "split_new": "new_split"}).to_dicts()


def _reward_stats(dataset: str, name: str, frame: pl.DataFrame | None) -> dict | None:
    column = REWARD_COLUMN.get(dataset)
    if frame is None or column not in frame.columns:
        return None
    values = frame[column].drop_nulls()
    stats = {"dataset": dataset, "column": column, "release": name, "n": values.len()}
    stats["mean"] = values.mean() if values.len() else None
    for q in QUANTILES:
        stats[f"p{round(q * 100)}"] = values.quantile(q, "nearest") if values.len() else None
    return stats


def _labels(old: pl.DataFrame | None, new: pl.DataFrame | None) -> list[dict]:
    def counts(frame: pl.DataFrame | None) -> dict:
        if frame is None or "label" not in frame.columns:
            return {}
        return dict(frame.group_by("label").len().iter_rows())

    before, after = counts(old), counts(new)
    return [
        {
            "dataset": "kto",
            "label": label,
            "before": before.get(label, 0),
            "after": after.get(label, 0),
        }
        for label in sorted(set(before) | set(after), key=str)
    ]


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out |= _flat(inner, f"{prefix}.{key}" if prefix else str(key))
        return out
    return {prefix: value}


def changed_values(before: dict, after: dict) -> list[dict]:
    """Every dotted key whose value differs (a missing key is None)."""
    a, b = _flat(before), _flat(after)
    return [
        {"key": k, "before": a.get(k), "after": b.get(k)}
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]


def _raw_file_changes(before: list[dict], after: list[dict]) -> dict[str, int]:
    a = {(r["source"], r["file"]): r["fingerprint"] for r in before}
    b = {(r["source"], r["file"]): r["fingerprint"] for r in after}
    return {
        "added": len(b.keys() - a.keys()),
        "removed": len(a.keys() - b.keys()),
        "changed": sum(1 for k in a.keys() & b.keys() if a[k] != b[k]),
    }


def _unchanged(old_manifest: dict, new_manifest: dict) -> frozenset[tuple[str, str]]:
    """(dataset, sha256) of the Parquet files both manifests list with the same bytes."""

    def files(manifest: dict) -> set[tuple[str, str]]:
        return {
            (e["path"].split("/", 1)[0], e["sha256"])
            for e in manifest.get("files") or []
            if e["path"].endswith(".parquet") and e.get("sha256")
        }

    return frozenset(files(old_manifest) & files(new_manifest))


def _sha256(manifest: dict) -> dict[str, str]:
    return {e["path"]: e["sha256"] for e in manifest.get("files") or [] if e.get("sha256")}


def _ids_unique(frames: dict[str, pl.DataFrame], name: str) -> bool:
    frame = frames.get(name)
    return frame is None or frame["_id"].n_unique() == frame.height


def diff_folders(old: Path, new: Path, old_manifest: dict, new_manifest: dict) -> ReleaseDiff:
    """The diff of two release folders (`new` may be a release still being written, with the
    manifest it will have: its `files` need only path and sha256). A Parquet file both hold
    with the same bytes (by the manifests' sha256) is not read whole: its rows equal in both,
    they count as unchanged without their content, as long as row ids are unique in each release
    (else that dataset's files are read whole, as `_keyed` then keys rows by their content)."""
    read: dict[tuple[int, int], pl.DataFrame] = {}  # key frames of the files read, by inode
    old_sha, new_sha = _sha256(old_manifest), _sha256(new_manifest)
    unchanged = _unchanged(old_manifest, new_manifest)
    a, b = _datasets(old, read, old_sha, unchanged), _datasets(new, read, new_sha, unchanged)
    whole = {d for d in set(a) | set(b) if not (_ids_unique(a, d) and _ids_unique(b, d))}
    if whole & {d for d, _ in unchanged}:
        unchanged = frozenset((d, h) for d, h in unchanged if d not in whole)
        a |= _datasets(old, read, old_sha, unchanged, only=whole)
        b |= _datasets(new, read, new_sha, unchanged, only=whole)
    names = sorted(set(a) | set(b))
    rewards = [
        s
        for d in names
        for s in (_reward_stats(d, "before", a.get(d)), _reward_stats(d, "after", b.get(d)))
        if s
    ]
    code = [
        {"field": f, "before": old_manifest.get(f), "after": new_manifest.get(f)}
        for f in CODE_FIELDS
        if old_manifest.get(f) != new_manifest.get(f)
    ]
    return ReleaseDiff(
        old=old_manifest.get("version", old.name),
        new=new_manifest.get("version", new.name),
        rows=[row for d in names for row in row_changes(d, a.get(d), b.get(d))],
        moved_groups=moved_groups(a, b),
        rewards=rewards,
        labels=_labels(a.get("kto"), b.get("kto")),
        config=changed_values(old_manifest.get("config") or {}, new_manifest.get("config") or {}),
        code=code,
        raw_files=_raw_file_changes(
            old_manifest.get("raw_files") or [], new_manifest.get("raw_files") or []
        ),
    )


def diff_releases(exports: Path, old: str, new: str) -> ReleaseDiff:
    """The diff of two complete releases under `exports`."""
    return diff_folders(
        exports / old, exports / new, read_manifest(exports / old), read_manifest(exports / new)
    )
