"""The trainability record (pipelines/release/trainability/record.py): a release is checked once,
before it is published, and the `release_is_trainable` check judges it from what its manifest
records, while its files are the bytes checked; otherwise on its files."""

from __future__ import annotations

import orjson
import polars as pl
import pytest

from pipelines.checks.revalidate import REVALIDATE_ENV
from pipelines.checks.verdicts import release_is_trainable
from pipelines.config.settings import Settings
from pipelines.release.store.files import MANIFEST
from pipelines.release.store.verify import verify_release
from pipelines.release.trainability.folder import trainability_problems
from pipelines.release.trainability.record import RECORD
from pipelines.release.write import content_hash, write_release
from pipelines.storage.fingerprint import sha256_file
from tests.unit.test_release_trainability import _request, kto

VERSION = "20261121-0000000000"
# what the checks say of kto row t0 with reward 0.5 labelled false (problems.py, by hand)
LABEL_AGAINST_T0 = "kto: 1 rows whose label is not the sign of the reward, e.g. ['t0']"


def _checked(folder, _sha256, _previous) -> list[str]:
    return trainability_problems(folder)


def _published(tmp_path, rows, check=_checked) -> Settings:
    """A data root whose one release holds these kto rows; `check` gives the problems recorded
    (None: no record, as releases of earlier versions)."""
    settings = Settings(raw_root=tmp_path / "raw", data_root=tmp_path / "data")
    request = _request(kto(rows), neutral=False, folder=tmp_path / "staged")
    exports = settings.data_root / "exports"
    write_release(exports, VERSION, content_hash(request), request, check=check)
    return settings


def _kto_file(settings: Settings):
    return next((settings.data_root / "exports" / VERSION / "kto").glob("*.parquet"))


def _hash_problems(settings: Settings) -> list[str]:
    """What `verify` finds of the files' bytes and rows (the hand-made split proof is no proof)."""
    problems = verify_release(settings.data_root / "exports" / VERSION)
    return [p for p in problems if not p.startswith("split proof:")]


def _manifest(settings: Settings) -> dict:
    return orjson.loads((settings.data_root / "exports" / VERSION / MANIFEST).read_bytes())


def test_the_release_records_what_its_check_found_on_which_bytes(tmp_path):
    settings = _published(tmp_path, [(0.5, True)])
    record = _manifest(settings)[RECORD]
    kto_file = _kto_file(settings)
    assert record["problems"] == []
    assert record["files"] == {f"kto/{kto_file.name}": sha256_file(kto_file)}


def test_the_check_fails_with_the_problems_the_record_says(tmp_path, monkeypatch):
    """The files are sound; the record is what is judged (the files are not read again)."""
    settings = _published(tmp_path, [(0.5, True)], check=lambda *_: ["kto: recorded"])
    # what reads the files (only folder.py's own functions call it, so nothing keeps the patch)
    monkeypatch.setattr(
        "pipelines.release.trainability.folder.checked_columns",
        lambda *_: pytest.fail("the files were checked again"),
    )
    verdict = release_is_trainable(settings)
    assert not verdict.passed
    assert verdict.metadata["problems"] == 1
    assert verdict.metadata["first_problems"] == "kto: recorded"


def test_a_file_rewritten_with_its_manifest_hash_is_checked_again(tmp_path):
    """`forget` rewrites a release's files and the hashes in its manifest, so `verify` passes; the
    record's own hash of the bytes checked no longer holds, and the files are read again."""
    settings = _published(tmp_path, [(0.5, True)])
    kto_file = _kto_file(settings)
    pl.read_parquet(kto_file).with_columns(label=pl.lit(False)).write_parquet(kto_file)
    manifest = _manifest(settings)
    for entry in manifest["files"]:
        if entry["path"] == f"kto/{kto_file.name}":
            entry["sha256"], entry["bytes"] = sha256_file(kto_file), kto_file.stat().st_size
    (kto_file.parents[1] / MANIFEST).write_bytes(orjson.dumps(manifest))
    assert _hash_problems(settings) == []
    verdict = release_is_trainable(settings)
    assert not verdict.passed
    assert verdict.metadata["first_problems"] == LABEL_AGAINST_T0


def test_a_file_edited_after_publishing_fails_verify_and_is_checked_again(tmp_path):
    settings = _published(tmp_path, [(0.5, True)])
    kto_file = _kto_file(settings)
    pl.read_parquet(kto_file).with_columns(label=pl.lit(False)).write_parquet(kto_file)
    assert _hash_problems(settings) == [f"kto/{kto_file.name}: sha256 differs from the manifest"]
    assert release_is_trainable(settings).metadata["first_problems"] == LABEL_AGAINST_T0


def test_a_release_without_a_record_is_checked_on_its_files(tmp_path):
    """A release an earlier version wrote (no record), whose files break a rule."""
    settings = _published(tmp_path, [(0.5, False)], check=None)
    assert RECORD not in _manifest(settings)
    verdict = release_is_trainable(settings)
    assert not verdict.passed
    assert verdict.metadata["first_problems"] == LABEL_AGAINST_T0


def test_a_record_made_by_other_code_is_not_trusted(tmp_path, monkeypatch):
    settings = _published(tmp_path, [(0.5, False)], check=lambda *_: [])
    assert release_is_trainable(settings).passed  # the record says no problem
    monkeypatch.setattr(
        "pipelines.release.trainability.record.engine_digest", lambda: "another engine"
    )
    assert release_is_trainable(settings).metadata["first_problems"] == LABEL_AGAINST_T0


def test_revalidate_checks_the_files_whatever_the_record_says(tmp_path, monkeypatch):
    settings = _published(tmp_path, [(0.5, False)], check=lambda *_: [])
    assert release_is_trainable(settings).passed  # the record says no problem
    monkeypatch.setenv(REVALIDATE_ENV, "1")
    assert release_is_trainable(settings).metadata["first_problems"] == LABEL_AGAINST_T0


def test_a_file_added_after_publishing_is_checked_with_the_others(tmp_path):
    settings = _published(tmp_path, [(0.5, True)])
    kto_file = _kto_file(settings)
    added = kto_file.with_name("train-added.parquet")
    pl.read_parquet(kto_file).with_columns(label=pl.lit(False)).write_parquet(added)
    assert release_is_trainable(settings).metadata["first_problems"] == LABEL_AGAINST_T0
