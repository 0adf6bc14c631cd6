"""A release's OpenAI fine-tuning files (exports/openai.py): `openai_sft/<split>.jsonl` from the
`sft` Parquet files and `openai_preference/<split>.jsonl` from `preference`'s, one line per row
that meets OpenAI's rules, in the order of the files (by name) and of their rows.

They are written from the release's own Parquet files one file at a time, so memory holds one
file's chat columns, never a dataset: by `write_release`, and again by `forget` after it rewrote
the Parquet files (the lines hold the same personal text as the rows they came from). Every split
of the dataset gets its file, empty when no row is in it, as a dataset's `<split>-empty.parquet`.

The manifest's `openai` section holds, per config, its dataset, folder, format version, lines per
split (`counts`) and the rows left out by reason (`left_out`); `verify` counts the lines again.
It also names, per Parquet file the lines came from (`parts`: by its path, with its sha256), where
they are (per split: offset, bytes, lines) and the rows it left out. A file's lines are a function
of its bytes and of this code: the next release, written by the same code (same engine digest),
copies the lines of a Parquet file whose sha256 a part of the previous release names from that
release's OpenAI file (when that file still has the sha256 its manifest recorded) instead of
converting its rows again."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import polars as pl

from pipelines.exports.openai import (
    FORMAT_VERSION,
    LINE,
    PREFERENCE_COLUMNS,
    SFT_COLUMNS,
    openai_preference,
    openai_sft,
)
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import sha256_file

SECTION = "openai"  # the manifest's key
SUFFIX = ".jsonl"


@dataclass(frozen=True)
class Format:
    """One OpenAI config: the dataset it is made from, the columns it reads, the converter."""

    dataset: str
    columns: tuple[str, ...]
    convert: Callable[[pl.DataFrame], tuple[pl.DataFrame, dict[str, int]]]


FORMATS = {
    "openai_sft": Format("sft", SFT_COLUMNS, openai_sft),
    "openai_preference": Format("preference", PREFERENCE_COLUMNS, openai_preference),
}


def jsonl_file(config: str, split: str) -> str:
    """A split's file, relative to the release: `openai_sft/train.jsonl`."""
    return f"{config}/{split}{SUFFIX}"


@dataclass(frozen=True)
class EarlierLines:
    """A config's parts in an earlier release (its folder and manifest): the Parquet files, by
    sha256, whose lines can be copied from its OpenAI files."""

    folder: Path
    config: str
    parts: dict[str, dict]  # sha256 of a Parquet file -> its part entry
    sha256: dict[str, str]  # that release's files' sha256, by path
    sound: dict[str, bool] = field(default_factory=dict)  # its OpenAI files, once hashed


def earlier_lines(folder: Path, manifest: dict) -> dict[str, EarlierLines]:
    """Per config, the parts of the release at `folder` whose lines this code would write the
    same (none when other code wrote them, or another format version)."""
    if manifest.get("engine_digest") != engine_digest():
        return {}
    sha256 = {entry["path"]: entry["sha256"] for entry in manifest.get("files", [])}
    out = {}
    for config, entry in (manifest.get(SECTION) or {}).items():
        if config in FORMATS and entry.get("format") == FORMAT_VERSION:
            parts = {part["sha256"]: part for part in (entry.get("parts") or {}).values()}
            out[config] = EarlierLines(folder, config, parts, sha256)
    return out


def write_openai_files(
    release: Path,
    parquet: dict[str, list[str]],
    splits: dict[str, list[str]],
    sha256: Mapping[str, str] | None = None,
    earlier: Mapping[str, EarlierLines] | None = None,
) -> dict[str, dict]:
    """Write every OpenAI config whose dataset the release has (see the module doc); `parquet`:
    each dataset's Parquet files, relative to `release`; `splits`: each dataset's splits, in
    file order; `sha256`: the Parquet files' (by path; a file without one records no part);
    `earlier`: `earlier_lines` of the previous release. The manifest's `openai` section."""
    return {
        config: _write_config(
            release,
            config,
            form,
            parquet.get(form.dataset, []),
            splits[form.dataset],
            sha256 or {},
            (earlier or {}).get(config),
        )
        for config, form in FORMATS.items()
        if form.dataset in splits
    }


def _copied(earlier: EarlierLines | None, sha256: str | None) -> dict | None:
    """The earlier part of the file with this sha256, when its lines can be copied: each OpenAI
    file it is in still holds the bytes that release recorded (checked once per file)."""
    if earlier is None or sha256 is None or sha256 not in earlier.parts:
        return None
    part = earlier.parts[sha256]
    for split in part["lines"]:
        rel = jsonl_file(earlier.config, split)
        if rel not in earlier.sound:
            path = earlier.folder / rel
            recorded = earlier.sha256.get(rel)
            earlier.sound[rel] = path.is_file() and sha256_file(path) == recorded
        if not earlier.sound[rel]:
            return None
    return part


def _copy_range(source: Path, offset: int, size: int, out: BinaryIO) -> None:
    with open(source, "rb") as f:
        f.seek(offset)
        while size > 0:
            block = f.read(min(size, 1 << 22))
            if not block:
                raise ValueError(f"{source}: shorter than its manifest says")
            out.write(block)
            size -= len(block)


def _write_config(
    release: Path,
    config: str,
    form: Format,
    files: list[str],
    splits: list[str],
    sha256: Mapping[str, str],
    earlier: EarlierLines | None,
) -> dict:
    (release / config).mkdir(exist_ok=True)  # forget writes over the files it rewrites
    counts = dict.fromkeys(splits, 0)
    left_out: dict[str, int] = {}
    parts: dict[str, dict] = {}
    with ExitStack() as stack:
        out = {s: stack.enter_context(open(release / jsonl_file(config, s), "wb")) for s in splits}
        for rel in sorted(files):  # by name: the same order whoever lists them
            copied = _copied(earlier, sha256.get(rel))
            part: dict = {"sha256": sha256.get(rel), "lines": {}, "left_out": {}}
            if copied is not None:
                assert earlier is not None
                part["left_out"] = copied["left_out"]
                for split, (offset, size, lines) in copied["lines"].items():
                    if split not in out:
                        raise ValueError(f"{rel}: rows of split {split!r}, not one of {splits}")
                    part["lines"][split] = [out[split].tell(), size, lines]
                    source = earlier.folder / jsonl_file(config, split)
                    _copy_range(source, offset, size, out[split])
                    counts[split] += lines
            else:
                lines, dropped = form.convert(
                    pl.read_parquet(release / rel, columns=list(form.columns))
                )
                part["left_out"] = dict(sorted(dropped.items()))
                for (split,), rows in lines.group_by("split", maintain_order=True):
                    if split not in out:
                        raise ValueError(f"{rel}: rows of split {split!r}, not one of {splits}")
                    start = out[split].tell()
                    # joined and handed over as bytes: going through a Python str of the text
                    # (decoded, then encoded again) cost ~4x this (100 MB mix: 0.15 -> 0.04 s)
                    out[split].write(rows.get_column(LINE).str.join("\n").cast(pl.Binary).item())
                    out[split].write(b"\n")
                    part["lines"][split] = [start, out[split].tell() - start, rows.height]
                    counts[split] += rows.height
            for reason, n in part["left_out"].items():
                left_out[reason] = left_out.get(reason, 0) + n
            if part["sha256"] is not None:
                parts[rel] = part
    return {
        "dataset": form.dataset,
        "path": config,
        "format": FORMAT_VERSION,
        "counts": counts,
        "left_out": dict(sorted(left_out.items())),
        "parts": parts,
    }


def dataset_files(manifest_files: list[dict], dataset: str) -> list[str]:
    """The Parquet files of `dataset` among a manifest's file entries."""
    return [
        e["path"]
        for e in manifest_files
        if e["path"].startswith(f"{dataset}/") and e["path"].endswith(".parquet")
    ]


def line_count(path: Path) -> int:
    """Lines of a JSONL file (each ends with a newline), read in blocks."""
    n = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            n += block.count(b"\n")
    return n


def jsonl_counts(release: Path, entry: dict) -> dict[str, int]:
    """Lines per split of one config of the manifest's `openai` section, counted in its files."""
    return {
        split: line_count(release / jsonl_file(entry["path"], split)) for split in entry["counts"]
    }
