"""What a release takes from the previous one for a file of the same bytes (its sha256) instead of
reading it again: the trainability findings of a Parquet file (trainability/record.py) and the
OpenAI lines made from it (store/openai_files.py). Two releases of two files each, the second
with one file changed and its neighbour not: what is taken equals what a release from scratch
finds and writes, and only the changed file is read."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl

from pipelines.release.store import openai_files
from pipelines.release.store.openai_files import earlier_lines, write_openai_files
from pipelines.release.trainability import folder as checks
from pipelines.release.trainability.folder import release_findings
from pipelines.release.trainability.record import RECORD, earlier_findings, trainability_record
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import sha256_file
from tests.unit.test_openai_release_files import TRAINED, _chat, _sft
from tests.unit.test_release_trainability import MESSAGES, chat, kto

# by hand (problems.py): a kto row with reward 0.5 labelled false breaks the sign rule
AGAINST = "kto: {n} rows whose label is not the sign of the reward, e.g. {ids}"


def _files(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _chats(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.with_columns(
        prompt=pl.lit(chat("user"), dtype=MESSAGES),
        completion=pl.lit(chat("assistant"), dtype=MESSAGES),
    )


def _kto_release(folder: Path, p001: pl.DataFrame) -> dict[str, str]:
    """kto/train-p000: t0 (sound); kto/train-p001: `p001`."""
    (folder / "kto").mkdir(parents=True)
    _chats(kto([(0.5, True)])).write_parquet(folder / "kto" / "train-p000.parquet")
    _chats(p001).write_parquet(folder / "kto" / "train-p001.parquet")
    return _files(folder)


def test_an_unchanged_files_findings_are_taken_and_a_changed_ones_found_again(
    tmp_path, monkeypatch
):
    old = tmp_path / "old"
    sha_old = _kto_release(old, kto([(0.5, True)]))
    found = release_findings(old, False, sha_old)
    assert found.problems == []
    files = [{"path": path, "sha256": digest} for path, digest in sha_old.items()]
    manifest = {RECORD: trainability_record(old, found, files)}

    new = tmp_path / "new"  # p000's bytes again; p001 now labels t0 against its reward
    sha_new = _kto_release(new, kto([(0.5, False)]))
    assert sha_new["kto/train-p000.parquet"] == sha_old["kto/train-p000.parquet"]
    read = []
    checked_columns = checks.checked_columns
    monkeypatch.setattr(
        checks,
        "checked_columns",
        lambda dataset, files: (
            read.extend(f.name for f in files) or checked_columns(dataset, files)
        ),
    )
    taken = release_findings(new, False, sha_new, earlier_findings(manifest, False))
    assert read == ["train-p001.parquet"]
    assert taken.problems == [AGAINST.format(n=1, ids=["t0"])]
    read.clear()
    assert taken == release_findings(new, False)  # from scratch: every file read
    assert read == ["train-p000.parquet", "train-p001.parquet"]


def test_findings_are_taken_only_from_this_code_with_the_same_neutral_setting():
    found = {"engine_digest": engine_digest(), "include_neutral": False, "files": {}}
    assert earlier_findings({RECORD: found | {"engine_digest": "other code"}}, False) == {}
    assert earlier_findings({RECORD: found}, True) == {}
    assert earlier_findings(None, False) == {}


def _sft_release(folder: Path, p001: pl.DataFrame) -> dict:
    """sft/train-p000 and sft/train-p001 and their OpenAI file; the manifest's parts of it."""
    (folder / "sft").mkdir(parents=True)
    _sft([("train", TRAINED)]).write_parquet(folder / "sft" / "train-p000.parquet")
    p001.write_parquet(folder / "sft" / "train-p001.parquet")
    parquet = {"sft": ["sft/train-p000.parquet", "sft/train-p001.parquet"]}
    return {"parquet": parquet, "sha256": _files(folder)}


def _converted_release(old: Path) -> dict:
    """A release of one trained sft row with its OpenAI files; the manifest those files name."""
    written = _sft_release(old, _sft([("train", TRAINED)]))
    section = write_openai_files(old, written["parquet"], {"sft": ["train"]}, written["sha256"])
    return {
        "engine_digest": engine_digest(),
        "files": [{"path": p, "sha256": d} for p, d in _files(old).items()],
        "openai": section,
    }


def test_an_unchanged_files_openai_lines_are_copied_and_a_changed_ones_converted(
    tmp_path, monkeypatch
):
    old = tmp_path / "old"
    manifest = _converted_release(old)
    # p001 changes: a second row, one that OpenAI's chat format leaves out (ends with a user turn)
    rows = [("train", TRAINED), ("train", _chat(("user", "q"), ("assistant", "a"), ("user", "?")))]
    new, scratch = tmp_path / "new", tmp_path / "scratch"
    written = _sft_release(new, _sft(rows))
    shutil.copytree(new, scratch)
    converted = []
    form = openai_files.FORMATS["openai_sft"]
    monkeypatch.setitem(
        openai_files.FORMATS,
        "openai_sft",
        openai_files.Format(
            form.dataset,
            form.columns,
            lambda rows: converted.append(rows.height) or form.convert(rows),
        ),
    )
    reused = write_openai_files(
        new, written["parquet"], {"sft": ["train"]}, written["sha256"], earlier_lines(old, manifest)
    )
    assert converted == [2]  # p001 alone
    converted.clear()
    fresh = write_openai_files(scratch, written["parquet"], {"sft": ["train"]}, written["sha256"])
    assert converted == [1, 2]
    jsonl = "openai_sft/train.jsonl"
    assert (new / jsonl).read_bytes() == (scratch / jsonl).read_bytes()
    assert reused == fresh
    assert reused["openai_sft"]["counts"] == {"train": 2}  # t0 of p000, t0 of p001
    assert reused["openai_sft"]["left_out"] == {"not_ending_with_assistant": 1}


def test_lines_are_not_copied_from_an_openai_file_changed_since_its_manifest(tmp_path):
    old = tmp_path / "old"
    manifest = _converted_release(old)
    (old / "openai_sft" / "train.jsonl").write_bytes(b"edited\n" * 2)
    new, scratch = tmp_path / "new", tmp_path / "scratch"
    written = _sft_release(new, _sft([("train", TRAINED)]))
    shutil.copytree(new, scratch)
    reused = write_openai_files(
        new, written["parquet"], {"sft": ["train"]}, written["sha256"], earlier_lines(old, manifest)
    )
    fresh = write_openai_files(scratch, written["parquet"], {"sft": ["train"]}, written["sha256"])
    jsonl = "openai_sft/train.jsonl"
    assert (new / jsonl).read_bytes() == (scratch / jsonl).read_bytes()
    assert reused == fresh
    # other code writes other lines: nothing is taken from a release it wrote
    assert earlier_lines(old, manifest | {"engine_digest": "other code"}) == {}
