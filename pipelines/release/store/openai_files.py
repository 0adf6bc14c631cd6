"""A release's OpenAI fine-tuning files (exports/openai.py): `openai_sft/<split>.jsonl` from the
`sft` Parquet files and `openai_preference/<split>.jsonl` from `preference`'s, one line per row
that meets OpenAI's rules, in the order of the files (by name) and of their rows.

They are written from the release's own Parquet files one file at a time, so memory holds one
file's chat columns, never a dataset: by `write_release`, and again by `forget` after it rewrote
the Parquet files (the lines hold the same personal text as the rows they came from). Every split
of the dataset gets its file, empty when no row is in it, as a dataset's `<split>-empty.parquet`.

The manifest's `openai` section holds, per config, its dataset, folder, format version, lines per
split (`counts`) and the rows left out by reason (`left_out`); `verify` counts the lines again."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.exports.openai import (
    FORMAT_VERSION,
    LINE,
    PREFERENCE_COLUMNS,
    SFT_COLUMNS,
    openai_preference,
    openai_sft,
)

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


def write_openai_files(
    release: Path, parquet: dict[str, list[str]], splits: dict[str, list[str]]
) -> dict[str, dict]:
    """Write every OpenAI config whose dataset the release has (see the module doc); `parquet`:
    each dataset's Parquet files, relative to `release`; `splits`: each dataset's splits, in
    file order. The manifest's `openai` section."""
    return {
        config: _write_config(
            release, config, form, parquet.get(form.dataset, []), splits[form.dataset]
        )
        for config, form in FORMATS.items()
        if form.dataset in splits
    }


def _write_config(
    release: Path, config: str, form: Format, files: list[str], splits: list[str]
) -> dict:
    (release / config).mkdir(exist_ok=True)  # forget writes over the files it rewrites
    counts = dict.fromkeys(splits, 0)
    left_out: dict[str, int] = {}
    with ExitStack() as stack:
        out = {s: stack.enter_context(open(release / jsonl_file(config, s), "wb")) for s in splits}
        for rel in sorted(files):  # by name: the same order whoever lists them
            lines, dropped = form.convert(
                pl.read_parquet(release / rel, columns=list(form.columns))
            )
            for reason, n in dropped.items():
                left_out[reason] = left_out.get(reason, 0) + n
            for (split,), part in lines.group_by("split", maintain_order=True):
                if split not in out:
                    raise ValueError(f"{rel}: rows of split {split!r}, not one of {splits}")
                # joined and handed over as bytes: going through a Python str of the text
                # (decoded, then encoded again) cost ~4x this (100 MB mix: 0.15 -> 0.04 s)
                out[split].write(part.get_column(LINE).str.join("\n").cast(pl.Binary).item())
                out[split].write(b"\n")
                counts[split] += part.height
    return {
        "dataset": form.dataset,
        "path": config,
        "format": FORMAT_VERSION,
        "counts": counts,
        "left_out": dict(sorted(left_out.items())),
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
