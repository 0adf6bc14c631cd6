"""An upgrade never publishes what a from-scratch build would not. For one module of each layer, the
engine is copied with that module changed (a one-line change that alters the release), and on a
data root built by today's code an incremental build with the changed engine must publish exactly
the release (its content hash and rows per dataset and split) that a from-scratch build with the
changed engine publishes. Every cache key holds the engine digest (storage/engine.py) and parsing
keys on the import closure of its code, so no cached result of the old code can survive into the
new release.

Each change is checked to matter (the changed release differs from today's), so a change that no
longer reaches the release fails here instead of proving nothing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.release.store.files import read_manifest
from tests.forked import ForkedTurnlake

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "clean"
# The clean fixtures' folders built: the dialogues, their feedback and the study's survey files
# reach every changed module below (each test checks that its change alters the release: without
# the study files the privacy and splits changes do not). The other sources' files would only add
# CPU to each of the 17 builds (the file: 96 s -> 81 s of CPU, measured), not a module changed.
SOURCES = ("dialogues", "feedback", "survey_responses")
KEY = "a fixed pseudonym key for the soundness test"
PROJECT_FILES = ("turnlake.toml", "rewards.toml", "scores.toml")

# layer → (module, the line as it is, the line changed); each line occurs exactly once
CHANGES = {
    "sources": (
        "pipelines/sources/dialogue/records.py",
        '"content": content,',
        '"content": content.upper(),',
    ),
    "ingest": (
        "pipelines/ingest/parse.py",
        "data = _read_to_end(fd, size)\n",
        'data = _read_to_end(fd, size).replace(b"the ", b"teh ")\n',
    ),
    "transforms": (
        "pipelines/transforms/dialogue/conversations.py",
        'text=pl.col("content"),',
        'text=pl.col("content").str.to_uppercase(),',
    ),
    "gold": (
        "pipelines/gold/rules/dialogue.py",
        'reward=aggregate(pl.col("value"), method, pl.col("observed_at")),',
        'reward=aggregate(pl.col("value"), method, pl.col("observed_at")) * 0.5,',
    ),
    "splits": (
        "pipelines/splits/assign.py",
        'digest = sha256_hex(pl.concat_str(pl.lit(f"{salt}\\x00"), split_groups))',
        'digest = sha256_hex(pl.concat_str(pl.lit(f"{salt}\\x01"), split_groups))',
    ),
    "exports": (
        "pipelines/exports/datasets/sft.py",
        'reward_target=pl.lit("turn")',
        'reward_target=pl.lit("turn step")',
    ),
    "privacy": (
        "pipelines/privacy/pseudonyms.py",
        'return f"{kind}_{digest[:16]}"',
        'return f"{kind}_{digest[:15]}"',
    ),
    "release": (
        "pipelines/release/privatize/privatize.py",
        "inner = sha256_hex(inner_pad + expr.cast(pl.Binary))",
        'inner = sha256_hex(inner_pad + (expr + "~").cast(pl.Binary))',
    ),
}


def _env(dagster_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNLAKE_")}
    env |= {"TURNLAKE_PSEUDONYM_KEY": KEY, "DAGSTER_HOME": str(dagster_home)}
    dagster_home.mkdir(parents=True, exist_ok=True)
    return env


def _build(forks: ForkedTurnlake, engine: Path, raw: Path, *data_roots: Path, home: Path) -> None:
    """`turnlake build` into each data root in turn, in one process running `engine`'s code
    (forked from one that has imported only the libraries: tests/forked.py)."""
    builds = [
        ["build", "--raw-root", str(raw), "--data-root", str(data), "--log-level", "WARNING"]
        for data in data_roots
    ]
    done = forks.run(builds[0], _env(home), cwd=engine, timeout=600, then=builds[1:], engine=engine)
    assert done.returncode == 0, done.stderr[-6000:]


@pytest.fixture(scope="module")
def engine_forks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkedTurnlake]:
    forks = ForkedTurnlake.for_engines(tmp_path_factory.mktemp("engine-forks"))
    yield forks
    forks.close()


def _copy_engine(target: Path) -> Path:
    # Bytecode copied too (where there is any), so that a fork compiles only the changed module:
    # copytree keeps the files' times, and Python recompiles a module whose source time or size
    # differs from its bytecode's record. The engine digest leaves bytecode out.
    for package in ("pipelines", "assets"):
        shutil.copytree(ROOT / package, target / package)
    for name in PROJECT_FILES:
        shutil.copy2(ROOT / name, target / name)
    return target


def released(data_root: Path) -> tuple[str, dict]:
    """(content hash, rows per dataset and split) of the latest release. The content hash is of
    the rows, not of how they are laid out in files (a data root that grew over several nights
    files them by landing batch; a fresh build has one batch)."""
    exports = data_root / "exports"
    manifest = read_manifest(exports / (exports / "LATEST").read_text().strip())
    return manifest["content_hash"], manifest["counts"]


def _build_today(forks: ForkedTurnlake, base: Path) -> None:
    for folder in SOURCES:
        shutil.copytree(FIXTURES / folder, base / "raw" / folder)
    engine = _copy_engine(base / "engine")
    _build(forks, engine, base / "raw", base / "data", home=base / "dagster")


@pytest.fixture(scope="module")
def built_today(built_once, engine_forks) -> tuple[Path, Path, tuple[str, dict]]:
    """The clean fixtures' `SOURCES` built by today's engine, once per test run: (raw root, data
    root, its release). Read-only: each test builds on its own copy."""
    base = built_once.get("soundness-today", lambda base: _build_today(engine_forks, base))
    return base / "raw", base / "data", released(base / "data")


@pytest.mark.parametrize("layer", list(CHANGES))
def test_an_incremental_build_after_a_code_change_publishes_what_a_fresh_build_does(
    built_today, engine_forks, tmp_path, layer
):
    """Change `layer`'s module in a copy of the engine; the incremental build on today's data root
    and a fresh build, both by the changed engine, publish the same release, not today's."""
    raw, today, today_release = built_today
    module, line, changed = CHANGES[layer]
    engine = _copy_engine(tmp_path / "engine")
    source = engine / module
    text = source.read_text()
    assert text.count(line) == 1, f"{module} no longer holds the line this test changes"
    source.write_text(text.replace(line, changed))

    incremental, scratch = tmp_path / "incremental", tmp_path / "scratch"
    shutil.copytree(today, incremental)
    _build(engine_forks, engine, raw, incremental, scratch, home=tmp_path / "dagster")

    fresh = released(scratch)
    assert fresh[0] != today_release[0], f"the {layer} change does not alter the release"
    assert released(incremental) == fresh
