"""Every place a data root (and this machine's cache folder for it) keeps, which of them can hold
a subject's data, and what `turnlake forget` does to each: the one list `forget` follows.

Each `Holder` names a `Layout` attribute (storage/layout.py), the file or folder it stands for,
what subject data it can hold and how `forget` treats it:

- `REBUILT`: the rebuild `forget` runs writes it again without the subject (the ingest withholds
  the subject's rows and files named after it and vacuums bronze with no retention);
- `ERASED`: rows still mentioning the subject are deleted from every table version kept, and the
  history before the forget is dropped (privacy/forget.py `erase_from_tables`);
- `REWRITTEN`: every complete release is rewritten without the subject (release/store/forget.py);
- `PURGED`: each file that mentions the subject is deleted, the others kept (build reports are
  views of past builds: none is rewritten);
- `DELETED`: deleted whole (`delete_caches`): caches, rebuilt by the next build, and what older
  versions left;
  deleting costs one slower build, proving each entry free of the subject would cost more code;
- `KEPT`: left as it is, with the reason (it holds no subject data, or it is the producing
  systems' data that turnlake never deletes).

tests/unit/test_subject_data.py fails when a `Layout` path is not classified here, and
tests/graph/test_forget.py when a file under a data root after a forget belongs to no holder or
still holds the subject while its holder says it cannot.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pipelines.storage import delta_cache
from pipelines.storage.layout import Layout
from pipelines.storage.uri import is_remote


class Forget(StrEnum):
    REBUILT = "rebuilt without the subject"
    ERASED = "rows erased, history dropped"
    REWRITTEN = "rewritten without the subject"
    PURGED = "files mentioning the subject deleted"
    DELETED = "deleted"
    KEPT = "kept"


@dataclass(frozen=True)
class Holder:
    attr: str  # the Layout attribute whose path(s) this is
    where: Callable[[Layout], Path]  # the file, or the folder holding every path `attr` names
    holds: str  # what subject data it can hold
    forget: Forget
    why: str  # how forget does it, or why nothing is needed
    # still names the subject after a forget, by design (the raw root and what mirrors it)
    may_keep_subject: bool = False


def _any_part(method: str) -> Callable[[Layout], Path]:
    """The folder of every path a Layout method with an argument names (`bronze_dir(t)` → the
    bronze folder), found by calling it with a placeholder argument."""
    return lambda layout: getattr(layout, method)("-").parent


HOLDERS: tuple[Holder, ...] = (
    # bronze: parsed raw rows, the parse quarantine (raw excerpts) and the ingest logs
    Holder(
        "bronze_dir",
        _any_part("bronze_dir"),
        "every parsed raw record: the subject's rows, ids and texts",
        Forget.REBUILT,
        "the ingest purges the subject's rows from every part and vacuums with no retention",
    ),
    Holder(
        "parse_quarantine_dir",
        _any_part("parse_quarantine_dir"),
        "raw excerpts of records that did not parse",
        Forget.REBUILT,
        "rows mentioning the subject purged by the ingest, vacuumed with no retention",
    ),
    Holder(
        "ingest_log",
        _any_part("ingest_log"),
        "raw file names (a file may be named after the subject)",
        Forget.REBUILT,
        "a file named after the subject is withheld and leaves the log; old log versions vacuumed",
    ),
    Holder(
        "legacy_ingest_log",
        _any_part("legacy_ingest_log"),
        "the pre-Delta ingest log: raw file names",
        Forget.DELETED,
        "nothing reads it; the layout migration removes it, forget too",
    ),
    # silver, gold, splits: the tables and their history
    Holder(
        "table_dir",
        lambda layout: layout.warehouse / "tables",
        "silver, gold and splits rows and their internal tables (partition map: group ids)",
        Forget.ERASED,
        "rebuilt without the subject, then every table rewritten without rows mentioning it, "
        "vacuumed with no retention",
    ),
    Holder(
        "snapshot_log",
        lambda layout: layout.warehouse / "tables",  # `<layer>/_snapshots.jsonl`, as `table_dir`
        "table versions and build metadata, no rows",
        Forget.ERASED,
        "only the current snapshot kept: as-of reads from before the forget fail cleanly",
    ),
    Holder(
        "legacy_generations",
        lambda layout: layout.warehouse,  # `warehouse/silver`, `silver.<run>`, …
        "tables of the layout before Delta: every row",
        Forget.DELETED,
        "nothing reads them; deleted with the rest of the caches",
    ),
    Holder(
        "silver_units",
        lambda layout: layout.silver_units,
        "an earlier version's cache of silver rows per chunk, from before opt-outs are withheld",
        Forget.DELETED,
        "nothing reads it since silver is made per partition from bronze; deleted if left",
    ),
    Holder(
        "duckdb",
        lambda layout: layout.duckdb,
        "views naming table files; for a remote data root, copies of the tables",
        Forget.REBUILT,
        "written by the rebuild, and again after rows are erased",
    ),
    # releases
    Holder(
        "exports",
        lambda layout: layout.exports,
        "released rows (pseudonymized, redacted) and manifests naming raw files",
        Forget.REWRITTEN,
        "every complete release rewritten without the subject's rows and raw files, with a "
        "deletion log naming the tombstone",
    ),
    Holder(
        "release",
        _any_part("release"),
        "one release",
        Forget.REWRITTEN,
        "as `exports`",
    ),
    Holder(
        "latest",
        lambda layout: layout.latest,
        "a version name",
        Forget.KEPT,
        "holds no subject data",
    ),
    Holder(
        "downloaded_release",
        _any_part("downloaded_release"),
        "copies of releases of a remote data root (a local folder)",
        Forget.DELETED,
        "downloaded again from the rewritten release when next read",
    ),
    Holder(
        "minari_export",
        _any_part("minari_export"),
        "the rl_steps episodes of releases as Minari datasets (`turnlake export minari`)",
        Forget.DELETED,
        "exported again from the rewritten release when the user asks (copies exported with "
        "`--to` elsewhere are the user's)",
    ),
    Holder(
        "release_parts",
        lambda layout: layout.release_parts,
        "built datasets per partition, before privatization",
        Forget.DELETED,
        "the next release builds every partition again",
    ),
    Holder(
        "release_stage",
        lambda layout: layout.release_stage,
        "a release's files before they are published",
        Forget.DELETED,
        "empty but after a crash mid-release",
    ),
    # caches of the engine's own state
    Holder(
        "legacy_trainability_memo",
        lambda layout: layout.legacy_trainability_memo,
        "left by older versions: problems found in release files, with examples taken from "
        "their rows",
        Forget.DELETED,
        "no longer read",
    ),
    Holder(
        "report_cache",
        lambda layout: layout.report_cache,
        "left by older versions: a report page and its SVG plots, whose data is inline (group "
        "ids, file names)",
        Forget.DELETED,
        "no longer read",
    ),
    Holder(
        "reports",
        lambda layout: layout.reports,
        "HTML build reports: quarantine examples quote raw text, tables name groups",
        Forget.PURGED,
        "a report mentioning the subject is deleted; the others stay as the record of past builds",
    ),
    Holder(
        "last_build",
        lambda layout: layout.last_build,
        "the last build's summary, replayed when nothing changed (largest groups, file names), "
        "and the listing of the raw tree it read (folder and file names)",
        Forget.DELETED,
        "the next build runs in full (and walks the raw tree whole) and writes it again",
    ),
    Holder(
        "partition_plan",
        lambda layout: layout.partition_plan,
        "the plan of silver partition runs: unit ids (episode, session, conversation ids) and "
        "raw file names",
        Forget.DELETED,
        "partition runs plan again from bronze without it; the planner commits it again",
    ),
    Holder(
        "forgetting",
        lambda layout: layout.forgetting,
        "nothing: present only while a forget erases",
        Forget.KEPT,
        "holds no subject data; removed when the forget ends",
    ),
    Holder(
        "legacy_passes",
        lambda layout: layout.legacy_passes,
        "left by older versions: per contract, the partitions and part files it passed",
        Forget.DELETED,
        "no longer read (the passes are in the layers' records and the ingest logs)",
    ),
    Holder(
        "legacy_listing_cache",
        lambda layout: Layout.legacy_listing_cache(layout.raw),  # (of the default raw root)
        "left by older versions: the raw root's folder and file names",
        Forget.DELETED,
        "no longer read (the listing is in `last_build`)",
    ),
    # privacy, keys, locks, the raw root, Dagster
    Holder(
        "tombstones",
        lambda layout: layout.tombstones,
        "one line per forget: a keyed hash of the subject, never its id",
        Forget.KEPT,
        "the record that the subject was forgotten",
    ),
    Holder(
        "generated_pseudonym_key",
        lambda layout: layout.generated_pseudonym_key,
        "the pseudonym key",
        Forget.KEPT,
        "holds no subject data; the tombstones are keyed with it",
    ),
    Holder(
        "lock_file",
        lambda layout: layout.lock_file,
        "the lock holder (host, process)",
        Forget.KEPT,
        "holds no subject data",
    ),
    Holder(
        "lease_file",
        lambda layout: layout.lease_file,
        "the run token holding the lock",
        Forget.KEPT,
        "holds no subject data",
    ),
    Holder(
        "steps_lock_file",
        lambda layout: layout.steps_lock_file,
        "nothing (an OS lock)",
        Forget.KEPT,
        "holds no subject data",
    ),
    Holder(
        "dagster_home",
        lambda layout: layout.dagster_home,
        "Dagster's run history: materialization metadata (counts, digests) and log lines, "
        "which can name raw files, never rows",
        Forget.KEPT,
        "the run history is the operator's: `dagster run delete` removes runs if file names "
        "identify the subject",
        may_keep_subject=True,
    ),
    Holder(
        "raw",
        lambda layout: layout.raw,
        "the producing systems' files, and the consent registry naming the subject",
        Forget.KEPT,
        "never deleted by turnlake: the registry must name the subject to keep it out of "
        "later builds; `forget` reports the raw files that mention it",
        may_keep_subject=True,
    ),
)

# Layout attributes that are folders of the holders above, or no path at all
CONTAINERS = {
    "data_root": "the data root itself",
    "warehouse": "bronze, tables and the legacy generations",
    "state": "`.turnlake/`: build record and key",
    "local": "the data root, or its local cache folder when it is remote",
    "local_state": "`.turnlake/` in `local`: release parts and stage",
    "is_remote": "not a path",
}


def holder_of(layout: Layout, path: Path) -> Holder | None:
    """The holder a file under the data root belongs to: the one whose path is the nearest
    folder of it (or itself); None when no holder's path contains it."""
    best: tuple[int, Holder] | None = None
    for h in HOLDERS:
        where = h.where(layout)
        if path == where or path.is_relative_to(where):
            depth = len(where.parts)
            if best is None or depth > best[0]:
                best = (depth, h)
    return best[1] if best else None


def _remove(path: Path) -> None:
    delta_cache.forget_under(str(path))  # a Delta table kept open must not outlive its files
    if is_remote(path):
        if path.exists():
            path.fs.rm(str(path), recursive=True)  # type: ignore[attr-defined] (a UPath)
    elif path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def deleted_paths(layout: Layout) -> list[Path]:
    """Every path `forget` deletes whole (the `DELETED` holders), for this data root."""
    paths: list[Path] = []
    for h in HOLDERS:
        if h.forget is not Forget.DELETED:
            continue
        if h.attr == "legacy_generations":
            paths += layout.legacy_generations()
        elif h.attr == "legacy_ingest_log":  # `_ingest/<source>.parquet` beside the Delta logs
            ingest = h.where(layout)
            paths += sorted(ingest.glob("*.parquet")) if ingest.exists() else []
        else:
            paths.append(h.where(layout))
    return paths


def delete_caches(layout: Layout) -> list[Path]:
    """Delete every `DELETED` holder of the data root; the paths that existed are returned."""
    removed = []
    for path in deleted_paths(layout):
        if path.exists() or (not is_remote(path) and path.is_symlink()):
            _remove(path)
            removed.append(path)
    return removed


def purge_files(layout: Layout, mentions: Callable[[str], bool]) -> list[str]:
    """Delete every file of the `PURGED` holders whose text `mentions` the subject; names of
    those deleted."""
    purged = []
    for h in HOLDERS:
        if h.forget is Forget.PURGED:
            purged += _purge_folder(h.where(layout), mentions)
    return purged


def _purge_folder(folder: Path, mentions: Callable[[str], bool]) -> list[str]:
    if not folder.exists():
        return []
    purged = []
    for path in sorted(_files(folder)):
        if mentions(path.read_text(errors="replace")):
            path.unlink()
            purged.append(path.name)
    return purged


def _files(folder: Path) -> Iterable[Path]:
    return (p for p in folder.rglob("*") if p.is_file())
