"""Corpus shapes other than the demo's mix, of about the same size (issue 15: a target met on one
shape only is not met).

- `long_jsonl`: the dialogue source alone, each dataset's conversations and feedback events in ONE
  JSONL file (tens of MB, hundreds of thousands of lines): the cost of a file is no longer amortised
  over many files, and a file is one ingest unit.
- `big_contexts`: the decision source alone, every decision carrying the long conversation history
  a real assistant puts in its RAG context (80–240 earlier messages, ~10–40 KB): few, large SQLite
  and JSONL files whose text dominates contexts, privatization and the release.
- `tiny_files`: the dialogue source alone, one conversation per file and five feedback events per
  file (~100 k files of ~1 KB): listing, stat-ing and per-file overhead dominate.

Each is made from the demo's own generators (same records, same bad cases), reshaped; sizes are
calibrated on a small scale like the demo corpus.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import later
import orjson

from pipelines.demo import decision, dialogue

SHAPES = ("long_jsonl", "big_contexts", "tiny_files")
CALIBRATION_SCALE = 20
EVENTS_PER_TINY_FILE = 5


def _jsonl_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix == ".jsonl")


def _dataset_folders(raw: Path) -> list[Path]:
    return [
        d for top in ("dialogues", "feedback") for d in sorted((raw / top).iterdir()) if d.is_dir()
    ]


def _lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    return [line for line in data.split(b"\n") if line]


def _concatenated(raw: Path) -> None:
    """Every dataset folder's JSONL files → one `all.jsonl` (a cut last record stays a bad line)."""
    for folder in _dataset_folders(raw):
        files = _jsonl_files(folder)
        with open(folder / "all.jsonl.part", "wb") as out:
            for path in files:
                out.write(b"".join(line + b"\n" for line in _lines(path)))
                path.unlink()
        (folder / "all.jsonl.part").rename(folder / "all.jsonl")


def _split_up(raw: Path) -> None:
    """Every dataset folder's JSONL files → one file per conversation, five events per file."""
    for folder in _dataset_folders(raw):
        per_file = EVENTS_PER_TINY_FILE if folder.parent.name == "feedback" else 1
        for path in _jsonl_files(folder):
            lines = _lines(path)
            target = folder / path.stem
            target.mkdir()
            for n in range(0, len(lines), per_file):
                chunk = lines[n : n + per_file]
                (target / f"{n // per_file:06d}.jsonl").write_bytes(b"\n".join(chunk) + b"\n")
            path.unlink()


HISTORY_LINES = (
    "Can you pull the numbers from last week's report before the call?",
    "I moved the design review to Thursday afternoon, the room is booked.",
    "The staging deploy failed again on the migration step, logs are in the channel.",
    "Who owns the onboarding checklist now that Priya changed teams?",
    "Please summarise the thread about the pricing change for the newsletter.",
    "The customer asked whether the export can include archived projects too.",
    "I think we should wait for legal before we send the renewal reminder.",
    "Reminder: the quarterly planning doc needs everyone's estimates by Friday.",
    "Does anyone remember which vendor we used for the conference badges?",
    "The dashboard numbers look off for March, the filter may exclude trials.",
)


def _long_history(rng: random.Random) -> list[dict]:
    return [
        {
            "role": rng.choice(("user", "assistant")),
            "name": rng.choice(decision.HUMANS),
            "content": " ".join(rng.choice(HISTORY_LINES) for _ in range(rng.randint(1, 3))),
        }
        for _ in range(rng.randint(80, 240))
    ]


def _with_long_contexts(session: Callable, rng: random.Random) -> Callable:
    """The demo's session generator, each decision's RAG context given a long earlier history."""

    def wrapped(session_rng: random.Random, start):
        records = session(session_rng, start)
        for record in records:
            context = record["ragContext"]
            context["conversationHistory"] = _long_history(rng) + context["conversationHistory"]
        return records

    return wrapped


def _write_big_contexts(raw: Path, scale: int, seed: int) -> None:
    original = decision._session
    decision._session = _with_long_contexts(original, random.Random(f"{seed}:history"))
    try:
        decision.write(raw, random.Random(f"{seed}:decision"), scale)
    finally:
        decision._session = original


def write_shape(shape: str, raw: Path, scale: int, seed: int) -> None:
    """Write corpus `shape` at `scale` under `raw` (which must not exist)."""
    raw.mkdir(parents=True)
    if shape == "big_contexts":
        _write_big_contexts(raw, scale, seed)
        return
    dialogue.write(raw, random.Random(f"{seed}:dialogue"), scale)
    if shape == "long_jsonl":
        _concatenated(raw)
    elif shape == "tiny_files":
        _split_up(raw)
    else:
        raise ValueError(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")


def bytes_per_scale(shape: str, work: Path, seed: int) -> float:
    raw = work / f"calibration-{shape}-s{CALIBRATION_SCALE}" / "raw"
    if raw.exists():
        shutil.rmtree(raw.parent)
    write_shape(shape, raw, CALIBRATION_SCALE, seed)
    size = sum(p.stat().st_size for p in raw.rglob("*") if p.is_file())
    return size / CALIBRATION_SCALE


# ------------------------------------------------------------------ a night's 1 % more


def _fresh_ids(line: bytes, tag: str) -> bytes:
    """A dialogue record under new conversation and event ids (new data, not copies of old)."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line
    if not isinstance(record, dict):
        return line
    for key in ("conversation_id", "event_id"):
        if isinstance(record.get(key), str):
            record[key] = f"{record[key]}-{tag}"
    return orjson.dumps(record)


def _new_dialogue_lines(
    raw: Path, scale: int, seed: int, tmp: Path, tag: str
) -> dict[str, list[bytes]]:
    """`dialogues/<dataset>` / `feedback/<dataset>` → 1 % more lines, under fresh ids, dated after
    every conversation of `raw` as a night's logs are (later.py: else the night's conversations
    would be the earliest of the groups they join and rename them)."""
    if tmp.exists():
        shutil.rmtree(tmp)
    dialogue.write(tmp, random.Random(f"{seed}:{tag}:dialogue"), max(1, scale // 100))
    by = later.shift_after(raw, tmp)
    for path in later.dialogue_files(tmp):
        later.shift_times(path, by)
    out = {}
    for folder in _dataset_folders(tmp):
        lines = [line for path in _jsonl_files(folder) for line in _lines(path)]
        out[folder.relative_to(tmp).as_posix()] = [_fresh_ids(line, tag) for line in lines]
    shutil.rmtree(tmp)
    return out


def _grown_sqlite(raw: Path, tag: str) -> list[Path]:
    """1 % more decisions in the SQLite database (the app kept writing to it): copies of every
    100th row under new ids."""
    path = raw / "decisions" / "continuum" / "coordination_decisions.sqlite"
    with sqlite3.connect(path) as db:
        columns = [r[1] for r in db.execute("PRAGMA table_info(coordination_decisions)")]
        rest = ", ".join(columns[1:])
        db.execute(
            f"INSERT INTO coordination_decisions (id, {rest}) SELECT id || '-{tag}', {rest} "
            "FROM coordination_decisions WHERE rowid % 100 = 0"
        )
    return [path]


def add_one_percent(shape: str, raw: Path, scale: int, seed: int, tmp: Path) -> Callable[[], None]:
    """Change `raw` as a night would (long files grow, new tiny files land, the database grows);
    returns what puts the corpus back byte for byte (mtimes included)."""
    tag = "n1"
    backup = tmp / "backup"
    saved: list[tuple[Path, Path]] = []
    added: list[Path] = []

    def keep(path: Path) -> None:
        copy = backup / path.relative_to(raw)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, copy)
        saved.append((path, copy))

    if shape == "big_contexts":
        keep(raw / "decisions" / "continuum" / "coordination_decisions.sqlite")
        _grown_sqlite(raw, tag)
    else:
        for folder, lines in _new_dialogue_lines(raw, scale, seed, tmp / "new", tag).items():
            if shape == "long_jsonl":
                keep(raw / folder / "all.jsonl")
                with open(raw / folder / "all.jsonl", "ab") as out:
                    out.write(b"".join(line + b"\n" for line in lines))
            else:
                per_file = EVENTS_PER_TINY_FILE if folder.startswith("feedback") else 1
                target = raw / folder / tag
                target.mkdir()
                added.append(target)
                for n in range(0, len(lines), per_file):
                    chunk = lines[n : n + per_file]
                    (target / f"{n // per_file:06d}.jsonl").write_bytes(b"\n".join(chunk) + b"\n")

    def undo() -> None:
        for path, copy in saved:
            shutil.copy2(copy, path)
        for folder in added:
            shutil.rmtree(folder)
        shutil.rmtree(backup, ignore_errors=True)

    return undo
