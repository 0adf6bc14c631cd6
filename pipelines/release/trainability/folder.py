"""The trainability checks (problems.py) over a release folder, one file at a time: memory
holds one file's checked columns, not a whole release. Every check but the episode invariants is
row by row, so a dataset's problems are its files' problems merged (counts summed, the first
examples in file order kept); `rl_steps` is checked whole on its small scalar columns (an episode
may span files). The OpenAI files are checked last, line by line (openai_lines.py), then the
Minari datasets, against the `rl_steps` rows (minari_episodes.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import polars as pl

from pipelines.release.store.files import MANIFEST
from pipelines.release.trainability.minari_episodes import minari_problems
from pipelines.release.trainability.openai_lines import openai_problems
from pipelines.release.trainability.problems import (
    CHATS,
    CHECKED_COLUMNS,
    KEEP_EMPTY,
    ROW_NAMES,
    Counted,
    ranked_problems,
)

Ranked = tuple[tuple[int, int, str], str]  # (rank, problem): problems sort by their rank
# (dataset, sha256 of a file's bytes) -> what checking that file alone found
Earlier = Mapping[tuple[str, str], list[Ranked]]


@dataclass(frozen=True)
class Findings:
    """The problems of a release folder and what each file checked alone found (`by_file`, by
    path in the release: every dataset's files but `rl_steps`, which is checked whole)."""

    problems: list[str]
    include_neutral: bool
    by_file: dict[str, list[Ranked]] = field(default_factory=dict)


def checked_columns(dataset: str, files: list[Path]) -> pl.DataFrame:
    """These files of one dataset, only the columns some check reads (a release can be large)."""
    prompt, completions = CHATS.get(dataset, (None, ()))
    wanted = {*CHECKED_COLUMNS, *ROW_NAMES, *(c for c in (prompt, *completions) if c)}
    parts = [pl.scan_parquet(f) for f in files]
    parts = [part.select(c for c in part.collect_schema() if c in wanted) for part in parts]
    return pl.concat(parts, how="diagonal_relaxed").collect()


def merge_problems(per_file: list[list[Ranked]]) -> list[Ranked]:
    """The problems of files of one dataset as one: a counted problem (same rank and text but the
    count) summed, any other problem once; in order of first appearance (each file lists every
    counted check, found or not: KEEP_EMPTY)."""
    merged: dict[tuple, Ranked] = {}
    for problems in per_file:
        for rank, problem in problems:
            if not isinstance(problem, Counted):
                merged.setdefault((rank, problem), (rank, problem))
                continue
            key = (rank, problem.what)
            if key in merged:
                old = merged[key][1]
                assert isinstance(old, Counted)
                problem = Counted(
                    old.dataset, old.what, old.n + problem.n, old.examples + problem.examples
                )
            merged[key] = (rank, problem)
    return list(merged.values())


def _file_problems(dataset: str, file: Path, include_neutral: bool) -> list[Ranked]:
    token = KEEP_EMPTY.set(True)
    try:
        return ranked_problems(dataset, checked_columns(dataset, [file]), include_neutral)
    finally:
        KEEP_EMPTY.reset(token)


def _whole_problems(dataset: str, files: list[Path], include_neutral: bool) -> list[Ranked]:
    return ranked_problems(dataset, checked_columns(dataset, files), include_neutral)


def checked_files(release: Path) -> dict[str, list[Path]]:
    """The files the checks read, by dataset: each dataset folder's Parquet files (a profile is a
    selection of a dataset's rows, so `profiles/` is not read again)."""
    found = {}
    for folder in sorted(p for p in release.iterdir() if p.is_dir()):
        files = sorted(folder.glob("*.parquet"))
        if files:
            found[folder.name] = files
    return found


def trainability_problems(release: Path) -> list[str]:
    """Every trainability problem of the release folder (empty = a trainer can rely on it), read
    one file at a time (see the module doc), with the release's `kto_include_neutral` read from
    its manifest (a folder not yet published has none)."""
    config = (
        orjson.loads((release / MANIFEST).read_bytes()).get("config", {})
        if (release / MANIFEST).exists()
        else {}
    )
    include_neutral = bool((config.get("release") or {}).get("kto_include_neutral", False))
    return release_findings(release, include_neutral).problems


def release_findings(
    release: Path,
    include_neutral: bool,
    sha256: Mapping[str, str] | None = None,
    earlier: Earlier | None = None,
) -> Findings:
    """`trainability_problems` of the folder, with what each file alone found; a file whose bytes
    (`sha256`: by path in the release) an earlier check of this code found something of
    (`earlier`, record.py) is not read again: a file's findings depend on its bytes alone."""
    sha256, earlier = sha256 or {}, earlier or {}
    ranked: list[Ranked] = []
    by_file: dict[str, list[Ranked]] = {}
    for name, files in checked_files(release).items():
        if name == "rl_steps":
            ranked += _whole_problems(name, files, include_neutral)
            continue
        for file in files:
            rel = file.relative_to(release).as_posix()
            known = earlier.get((name, sha256.get(rel, "")))
            by_file[rel] = (
                known if known is not None else _file_problems(name, file, include_neutral)
            )
        merged = merge_problems([by_file[f.relative_to(release).as_posix()] for f in files])
        ranked += [(r, p) for r, p in merged if not isinstance(p, Counted) or p.n]
    found = [problem for _, problem in sorted(ranked, key=lambda found: found[0])]
    problems = found + openai_problems(release) + minari_problems(release)
    return Findings(problems, include_neutral, by_file)
