"""The rows of a partition's privatized entry kept now, and their redaction ledger.

A privatized entry holds the rows kept when it was made and names the rows it left out
(LEFT_OUT). New data only drops more rows (a prompt now asked in an earlier split), so the entry
stays good while what it left out is still dropped: the rows dropped since are filtered out when
its files are read, and it is not privatized again. The ledger counts kept rows, so the entry
keeps what makes it cheap to derive: the ledger of its rows, how many strings each dataset holds
and the replacement counts of every string that had one (COUNTS). The ledger of the rows kept
now is the entry's minus what the newly dropped rows' strings count, stored as an entry of its
own keyed by the rows dropped now.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.release.privatize.privatize import count_replacements, occurrences_of
from pipelines.release.store import part_cache
from pipelines.storage.fingerprint import fingerprint, json_part

COUNTS = "_counts"  # value, one count column per kind: the strings that had a replacement
LEFT_OUT = "_left_out"  # dataset, row: the rows as built the entry does not hold
Ledger = dict[str, dict[str, int]]


def replacement_counts(values: list[pl.Series], cleaned: pl.DataFrame) -> pl.DataFrame:
    """The rows of `cleaned` (value, cleaned, one count column per kind) for any of `values` (each
    dataset's distinct strings) with any replacement, without the cleaned text. The few rows with
    a replacement are looked up in each dataset's strings: the strings of all datasets together
    (~600 000 in the largest 1 GB partition) are never concatenated."""
    kinds = [c for c in cleaned.columns if c not in ("value", "cleaned")]
    mine = cleaned.filter(pl.sum_horizontal(kinds) > 0) if kinds else cleaned
    found = pl.any_horizontal(False, *(pl.col("value").is_in(v.implode()) for v in values))
    return mine.filter(found).select("value", *kinds)


def entry_key(private: str, keep: pl.DataFrame) -> str:
    """The ledger entry of the privatized entry `private` with the rows `keep` drops."""
    dropped = keep.filter(~pl.col("keep")).select("dataset", "row").rows()
    return "ledger-" + fingerprint([private, json_part(dropped)])[:40]


def kept_ledger(
    whole: Ledger, texts: dict[str, int], dropped: dict[str, pl.DataFrame], counts: pl.DataFrame
) -> Ledger:
    """The ledger `privatize.finish` gives for the kept rows, from the ledger of all rows
    (`whole`), their string totals (`texts`) and the dropped rows as built (`dropped`)."""
    out: Ledger = {}
    for name, counted in whole.items():
        rows = dropped.get(name)
        if rows is None or rows.is_empty():
            out[name] = counted
            continue
        _, occurrences = occurrences_of(rows)
        less = count_replacements(occurrences, counts)
        left = {kind: n - less.get(kind, 0) for kind, n in counted.items()}
        has_text = texts[name] > int(occurrences.get_column("n").sum())
        ledger = {"pseudonym": 0} if has_text else {}
        out[name] = dict(sorted((ledger | {k: n for k, n in left.items() if n}).items()))
    return out


def _newly_dropped(keep: pl.DataFrame, left_out: pl.DataFrame) -> pl.DataFrame:
    dropped = keep.filter(~pl.col("keep")).select("dataset", "row")
    return dropped.join(left_out, on=["dataset", "row"], how="anti")


def left_out(root: Path | None, private: str, keep: pl.DataFrame) -> pl.DataFrame | None:
    """The rows the stored entry `private` left out, when all of them are dropped now (`keep`);
    None, and the entry discarded, when one of them is kept now (it must be made again)."""
    _, frames = part_cache.load(root, private, [LEFT_OUT])
    if LEFT_OUT in frames:
        dropped = keep.filter(~pl.col("keep")).select("dataset", "row")
        if frames[LEFT_OUT].join(dropped, on=["dataset", "row"], how="anti").is_empty():
            return frames[LEFT_OUT]
    part_cache.discard(root, private)
    return None


def entry_masks(
    keep: pl.DataFrame, left_out: pl.DataFrame, names: list[str]
) -> dict[str, pl.Series]:
    """Dataset -> which rows of an entry that left out `left_out` are kept now (in row order)."""
    held = keep.join(left_out, on=["dataset", "row"], how="anti", maintain_order="left")
    return {name: held.filter(pl.col("dataset") == name).get_column("keep") for name in names}


def cached_kept_ledger(
    root: Path | None,
    entries: tuple[str, str],
    meta: dict,
    keep: pl.DataFrame,
    left_out: pl.DataFrame,
) -> Ledger:
    """The ledger of the rows kept now of a reused privatized entry (`entries`: its built and
    privatized entry keys, `meta` the latter's): from the store, or derived and stored."""
    key = entry_key(entries[1], keep)
    stored, _ = part_cache.load(root, key, names=())
    if stored:
        return stored["ledger"]
    newly = _newly_dropped(keep, left_out)
    ledger = meta["ledger"]
    if not newly.is_empty():
        names = sorted(set(newly.get_column("dataset")))
        _, built = part_cache.load(root, entries[0], names)
        _, frames = part_cache.load(root, entries[1], [COUNTS])
        rows = {
            name: built[name].filter(
                pl.int_range(pl.len(), dtype=pl.UInt32).is_in(
                    newly.filter(pl.col("dataset") == name).get_column("row").implode()
                )
            )
            for name in names
        }
        ledger = kept_ledger(ledger, meta["texts"], rows, frames[COUNTS])
    part_cache.save(root, key, {"ledger": ledger}, {})
    return ledger


def summed(ledgers: list[Ledger], names: list[str]) -> Ledger:
    """The ledger of several partitions: each dataset of `names` with its counts added up."""
    total: Ledger = {name: {} for name in names}
    for ledger in ledgers:
        for name, counts in ledger.items():
            for kind, n in counts.items():
                total[name][kind] = total[name].get(kind, 0) + n
    return {name: dict(sorted(c.items())) for name, c in total.items()}
