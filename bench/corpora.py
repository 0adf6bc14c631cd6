"""The benchmark's corpora: the demo's mix at a size (cached), its 1 % of new files, and corpora
of other shapes (bench/shapes.py)."""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import later
import shapes

SIZES = {"10MB": 10 * 10**6, "100MB": 100 * 10**6, "1GB": 10**9}
SEED = 7
EXTRA_SEED = 1007
CALIBRATION_SCALE = 4
MAX_TINY_FILES, TINY_FILE_BYTES = 100_000, 420  # ~420 B per file in the tiny-files shape
NIGHT_TAG = "bench1pct"  # in the names and ids of the demo mix's 1 % of new files
MakeDemo = Callable[[Path, int, int, Path], None]  # raw, scale, seed, work: `turnlake demo`


def tree_stats(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def calibrate(work: Path, make_demo: MakeDemo) -> float:
    """Raw bytes per unit of demo --scale (the generator grows ~linearly)."""
    raw = work / f"calibration-s{CALIBRATION_SCALE}" / "raw"
    if not raw.is_dir():
        make_demo(raw, CALIBRATION_SCALE, SEED, work)
    return tree_stats(raw)[1] / CALIBRATION_SCALE


def _cached(folder: Path, write: Callable[[Path], int], **extra) -> dict:
    """The corpus under `folder` ({raw, scale, files, bytes, generate_s, **extra}), written by
    `write(raw) -> scale` unless its marker says it is there already."""
    marker = folder / "corpus.json"
    if marker.exists():
        return json.loads(marker.read_text())
    if folder.exists():
        shutil.rmtree(folder)
    start = datetime.now(UTC)
    scale = write(folder / "raw")
    files, size = tree_stats(folder / "raw")
    info = {
        "raw": str(folder / "raw"),
        **extra,
        "scale": scale,
        "files": files,
        "bytes": size,
        "generate_s": round((datetime.now(UTC) - start).total_seconds(), 1),
    }
    marker.write_text(json.dumps(info))
    return info


def corpus(work: Path, label: str, per_scale: float, make_demo: MakeDemo) -> dict:
    """Cached corpus of the demo's mix for a size label."""

    def write(raw: Path) -> int:
        scale = max(1, round(SIZES[label] / per_scale))
        make_demo(raw, scale, SEED, work)
        return scale

    return _cached(work / f"corpus-{label}", write)


def _renamed(rel: str, tag: str) -> str:
    """A path no base file has, still matching the source's layout (so the adapter discovers it)."""
    parts = rel.split("/")
    top = parts[0]
    if top == "scenarios":  # scenarios/<state>/<id>/moderator_dialog.jsonl
        parts[2] = f"{parts[2]}-{tag}"
    elif top == "outputs":  # outputs/<run>/<file>
        parts[1] = f"{parts[1]}-{tag}"
    elif top == "prar":  # prar/outputs/<run>/state.json
        parts[2] = f"{parts[2]}-{tag}"
    elif top in ("dialogues", "feedback", "decisions"):  # recursive globs: add a folder
        parts.insert(2 if len(parts) > 2 else 1, tag)
    else:  # survey_responses/<kind>/<name>: flat folders, rename the file
        stem, dot, suffix = parts[-1].rpartition(".")
        parts[-1] = f"{stem}-{tag}{dot}{suffix}"
    return "/".join(parts)


# Ids the demo generator counts from a fixed start (conversations `tut-1000`, …, legacy `7000`,
# …) or draws from a small space (`ces_exp_000`–`999`): a corpus made with another seed reuses them,
# so its files, copied as they are, would name the corpus's own conversations and experiments with
# other content. A night's new files name new ones: these ids get the tag (the other sources' ids
# are drawn per seed, or are the folder the copy renames).
_TEXT_IDS = re.compile(rb'("(?:conversation_id|event_id|experiment_id)"\s*:\s*")([^"]*)(")')
_NUMBER_IDS = re.compile(rb'("conversation_id"\s*:\s*)(\d+)')
_NUMBER_ID_OFFSET = 10_000_000


def _give_fresh_ids(path: Path, tag: str) -> None:
    """Rewrite a copied dialogue, feedback or Social RL file's reused ids (above) as new ones,
    on its bytes: the demo's deliberately broken records stay as broken as they were."""
    if path.parts[-1].endswith((".sqlite", ".gz")):
        return
    data = path.read_bytes()
    fresh = _TEXT_IDS.sub(lambda m: m[1] + m[2] + b"-" + tag.encode() + m[3], data)
    fresh = _NUMBER_IDS.sub(lambda m: m[1] + str(int(m[2]) + _NUMBER_ID_OFFSET).encode(), fresh)
    if fresh != data:
        stat = path.stat()
        path.write_bytes(fresh)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def add_new_files(work: Path, info: dict, make_demo: MakeDemo) -> list[Path]:
    """Copy ~1 % of the corpus's file count from a demo corpus made with another seed, under new
    names, naming new conversations and experiments, with dialogue times after the corpus's
    (later.py)."""
    extra = work / f"extra-{info['scale']}" / "raw"
    if not extra.is_dir():
        make_demo(extra, max(1, math.ceil(info["scale"] / 100)), EXTRA_SEED, work)
    candidates = sorted(p for p in extra.rglob("*") if p.is_file())
    want = max(1, round(info["files"] / 100))
    picked = random.Random(EXTRA_SEED).sample(candidates, min(want, len(candidates)))
    raw = Path(info["raw"])
    by = later.shift_after(raw, extra)
    added = []
    for path in sorted(picked):
        target = raw / _renamed(path.relative_to(extra).as_posix(), NIGHT_TAG)
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        _give_fresh_ids(target, NIGHT_TAG)
        if target.relative_to(raw).parts[0] in later.DIALOGUE_FOLDERS:
            stat = target.stat()
            later.shift_times(target, by)
            os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        added.append(target)
    return added


def check_intact(info: dict) -> None:
    """Stop unless the corpus holds exactly the files and bytes its marker recorded: a run
    interrupted during its 1 % step leaves the night's files in it, and the next run would then
    build them into its full build and find nothing new (the demo mix's night files, named with
    NIGHT_TAG, are removed first)."""
    raw = Path(info["raw"])
    leftovers = sorted({p for p in raw.rglob(f"*{NIGHT_TAG}*")}, key=lambda p: len(p.parts))
    for path in leftovers:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    found = tree_stats(raw)
    if found != (info["files"], info["bytes"]):
        raise SystemExit(
            f"{raw}: {found[0]} files, {found[1]} bytes, but its corpus.json says {info['files']}"
            f" files, {info['bytes']} bytes (a run interrupted while a night was added?); delete "
            f"{raw.parent} to generate it again"
        )


def remove_added(raw: Path, added: list[Path]) -> None:
    for path in added:
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent != raw and parent.exists() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


def shape_corpus(work: Path, label: str, shape: str) -> dict:
    """Cached corpus of another shape (bench/shapes.py) of about the size `label`; a many-tiny-
    files corpus stops at MAX_TINY_FILES files."""

    def write(raw: Path) -> int:
        target = SIZES[label]
        if shape == "tiny_files":
            target = min(target, MAX_TINY_FILES * TINY_FILE_BYTES)
        scale = max(1, round(target / shapes.bytes_per_scale(shape, work, SEED)))
        shapes.write_shape(shape, raw, scale, SEED)
        return scale

    return _cached(work / f"corpus-{label}-{shape}", write, shape=shape)
