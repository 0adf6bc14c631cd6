"""Source adapters: the only code that knows a raw format.

Each adapter is a package `pipelines/sources/<source>/` (no Dagster imports) in the same shape:
`__init__.py` is the adapter itself, thin:

    SOURCE: str                                   # one of pipelines.config.SOURCES def
    discover(raw_root: Path) -> list[RawFile]  # this source's files, sorted by rel_path def
    parse_file(file: RawFile, data: bytes, settings: Settings) -> ParseResult

plus how the source names what its paths mean (dataset, copy kind, scenario folder); `records.py`
turns one parsed record into one bronze row or raises RecordError; and what the source needs
besides (decision: `blobs.py`, `sqlite.py`; study: `files.py`; scenario and
social_rl: `fields.py`). Shared by all: `base` (error kinds, RawFile, ParseResult, quarantine
rows, ids), `values` (typed values out of a record), `jsonio` (JSON records out of bytes).

Its bronze tables are Pandera models in `pipelines/schemas/bronze/<source>.py` (`BRONZE_MODELS:
dict[table_name, model]`); every bronze table has `file` and `locator` columns, and each bronze
row is one raw record. The matching silver transform is the package
`pipelines.transforms.<source>`:

    def to_silver(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.DataFrame
    | pl.LazyFrame]

returning frames for any of the silver tables (`pipelines.schemas.silver.SILVER_MODELS`);
quarantine rows it returns (orphans, conflicts) carry `stage="silver"`. Adding a source = adapter
+ bronze models + transform + demo writer + fixtures; nothing downstream changes.
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from pipelines.config.names import SOURCES


@cache
def adapter(source: str) -> ModuleType:
    # cached: asked once per raw file parsed, and a module lookup cost ~3 µs of a tiny file's ~100
    return importlib.import_module(f"pipelines.sources.{source}")


def all_adapters() -> dict[str, ModuleType]:
    return {source: adapter(source) for source in SOURCES}
