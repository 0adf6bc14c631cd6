"""The redaction ledger of a partition's kept rows.

A partition's privatized entry covers every row as built, dropped or not, so a change in which of
its rows the global duplicate-prompt rule drops (new data in another split asking the same
prompt) does not privatize it again: the dropped rows are filtered out when its files are
written. The ledger counts kept rows only, so the entry keeps what makes it cheap to derive: the
ledger of all its rows, how many strings each dataset holds, and the replacement counts of every
string that had one (COUNTS). The kept rows' ledger is the whole ledger minus what the dropped
rows' strings count, stored as an entry of its own keyed by the dropped rows.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.release import part_cache
from pipelines.release.privatize import count_replacements, occurrences_of
from pipelines.storage.fingerprint import fingerprint, json_part

COUNTS = "_counts"  # value, one count column per kind: the strings that had a replacement
Ledger = dict[str, dict[str, int]]


def replacement_counts(values: pl.Series, cleaned: pl.DataFrame) -> pl.DataFrame:
    """The rows of `cleaned` (value, cleaned, one count column per kind) for `values` with any
    replacement, without the cleaned text."""
    kinds = [c for c in cleaned.columns if c not in ("value", "cleaned")]
    mine = cleaned.join(values.unique().to_frame("value"), on="value", how="semi")
    if kinds:
        mine = mine.filter(pl.sum_horizontal(kinds) > 0)
    return mine.select("value", *kinds)


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


def dropped_rows(datasets: dict[str, pl.DataFrame], keep: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Each dataset's rows (as built) that `keep` drops."""
    return {
        name: frame.filter(~keep.filter(pl.col("dataset") == name).get_column("keep"))
        for name, frame in datasets.items()
    }


def cached_kept_ledger(
    root: Path | None, entries: tuple[str, str], meta: dict, keep: pl.DataFrame, names: list[str]
) -> Ledger:
    """The kept rows' ledger of a reused privatized entry (`entries`: its built and privatized
    entry keys, `meta` the latter's): from the store, or derived and stored."""
    key = entry_key(entries[1], keep)
    stored, _ = part_cache.load(root, key, names=())
    if stored:
        return stored["ledger"]
    if keep.get_column("keep").all():
        ledger = meta["ledger"]
    else:
        _, built = part_cache.load(root, entries[0], names)
        _, frames = part_cache.load(root, entries[1], [COUNTS])
        ledger = kept_ledger(
            meta["ledger"], meta["texts"], dropped_rows(built, keep), frames[COUNTS]
        )
    part_cache.save(root, key, {"ledger": ledger}, {})
    return ledger
