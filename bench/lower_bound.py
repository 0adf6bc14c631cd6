"""Lower bound: read every raw byte, parse with orjson (JSONL line by line, JSON whole file,
SQLite rows with sqlite3) and write the parsed records to Parquet, one file per source folder.
No validation, no typing beyond what Parquet needs: each record is kept as JSON text.

Usage: python bench/lower_bound.py RAW_ROOT OUT_DIR
"""

from __future__ import annotations

import re
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

import orjson
import polars as pl

_UNIT_START = re.compile(rb"(?m)^[{\[]")


def _jsonl(data: bytes):
    """JSON Lines, or pretty-printed objects concatenated (a record starts at a line opening with
    { or [)."""
    starts = [m.start() for m in _UNIT_START.finditer(data)] or [0]
    for a, b in zip(starts, [*starts[1:], len(data)], strict=True):
        try:
            yield orjson.loads(data[a:b])
        except orjson.JSONDecodeError:
            yield None


def _sqlite(path: Path):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        try:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        except sqlite3.DatabaseError:
            return
        for table in tables:
            cursor = db.execute(f'SELECT * FROM "{table}"')
            names = [d[0] for d in cursor.description]
            for row in cursor:
                yield dict(zip(names, row, strict=True))


def records_of(path: Path):
    if path.suffix == ".sqlite":
        path.read_bytes()  # every raw byte is read, as the pipeline does (fingerprint)
        yield from _sqlite(path)
        return
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        yield from _jsonl(data)
        return
    try:
        yield orjson.loads(data)
    except orjson.JSONDecodeError:
        yield None


def main(raw_root: Path, out_dir: Path) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    columns: dict[str, dict[str, list]] = defaultdict(
        lambda: {"file": [], "record": [], "json": []}
    )
    n_files = n_bytes = n_records = n_bad = 0
    for path in sorted(p for p in raw_root.rglob("*") if p.is_file()):
        rel = path.relative_to(raw_root).as_posix()
        source = rel.split("/", 1)[0]
        n_files += 1
        n_bytes += path.stat().st_size
        target = columns[source]
        for i, record in enumerate(records_of(path)):
            n_records += 1
            if record is None:
                n_bad += 1
                continue
            target["file"].append(rel)
            target["record"].append(i)
            target["json"].append(orjson.dumps(record, default=str).decode())
    for source, cols in columns.items():
        pl.DataFrame(
            cols, schema={"file": pl.String, "record": pl.Int64, "json": pl.String}
        ).write_parquet(out_dir / f"{source}.parquet")
    return {"files": n_files, "bytes": n_bytes, "records": n_records, "unparseable": n_bad}


if __name__ == "__main__":
    print(orjson.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]))).decode())
