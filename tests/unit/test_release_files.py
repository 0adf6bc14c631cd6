"""Release writing and verification on tiny hand-made datasets (no warehouse needed)."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import polars as pl
import pytest
import yaml

from pipelines.release.build.request import ReleaseRequest
from pipelines.release.store.catalog import list_releases
from pipelines.release.store.files import MANIFEST, complete_releases, latest_release, read_manifest
from pipelines.release.store.stores import pull_to_folder
from pipelines.release.store.verify import verify_release
from pipelines.release.write import content_hash, existing_version, write_release
from pipelines.storage.objects import ObjectRoot
from tests.unit._staged import staged

MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))


def sft(rows: list[tuple[str, str, str]]) -> pl.DataFrame:
    """rows of (split, group_id, assistant text)."""
    return pl.DataFrame(
        {
            "messages": [
                [{"role": "user", "content": f"q {g}"}, {"role": "assistant", "content": t}]
                for _, g, t in rows
            ],
            "split": [s for s, _, _ in rows],
            "group_id": [g for _, g, _ in rows],
            "episode_id": [f"dialogue:{g}" for _, g, _ in rows],
            "prompt_hash": [f"h-{g}" for _, g, _ in rows],
        },
        schema_overrides={"messages": MESSAGES},
    )


def request(frame: pl.DataFrame, folder: Path, salt: str = "s1") -> ReleaseRequest:
    proof = {"overlaps": {"group_id": 0, "participant": 0, "prompt_hash": 0}, "salt": salt}
    return ReleaseRequest(
        staged({"sft": frame}, folder),
        proof,
        {"splits": {"salt": salt}},
        [{"source": "dialogue", "file": "a", "fingerprint": "f"}],
        "0.1.0",
        "abc",
    )


@pytest.fixture
def released(tmp_path, monkeypatch):
    monkeypatch.setattr("pipelines.release.store.verify.proof_problems", lambda proof: [])
    exports = tmp_path / "exports"
    frame = sft([("train", "g1", "a"), ("train", "g2", "b"), ("test", "g3", "c")])
    req = request(frame, tmp_path / "staged")
    digest = content_hash(req)
    path = write_release(exports, f"20261121-{digest[:10]}", digest, req)
    return exports, path, frame


def test_release_has_split_files_manifest_card_and_is_latest(released):
    exports, path, _ = released
    assert sorted(p.name for p in (path / "sft").iterdir()) == [
        "test-b00000-p000.parquet",
        "train-b00000-p000.parquet",
    ]
    manifest = read_manifest(path)
    assert manifest["counts"] == {"sft": {"train": 2, "test": 1}}
    assert {f["path"] for f in manifest["files"]} >= {
        "sft/train-b00000-p000.parquet",
        "sft/test-b00000-p000.parquet",
        "README.md",
        "split_proof.json",
    }
    assert latest_release(exports) == path.name
    card = (path / "README.md").read_text()
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["configs"] == [
        {
            "config_name": "sft",
            "default": True,
            "data_files": [
                {"split": "train", "path": "sft/train*.parquet"},
                {"split": "test", "path": "sft/test*.parquet"},
            ],
        }
    ]


def test_verify_passes_on_a_fresh_release_and_fails_on_one_corrupted_byte(released):
    _, path, _ = released
    assert verify_release(path) == []
    target = path / "sft" / "train-b00000-p000.parquet"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    assert verify_release(path) == [
        "sft/train-b00000-p000.parquet: sha256 differs from the manifest"
    ]


def test_verify_reports_counts_per_split_that_differ_from_the_files(released):
    _, path, _ = released
    manifest = orjson.loads((path / "manifest.json").read_bytes())
    assert manifest["counts"]["sft"] == {"train": 2, "test": 1}  # the fixture's rows, by hand
    manifest["counts"]["sft"] = {"train": 3, "test": 1}
    (path / "manifest.json").write_bytes(orjson.dumps(manifest))
    assert verify_release(path) == ["sft: rows per split differ from the manifest's counts"]


def test_verify_passes_a_dataset_without_rows_and_a_release_without_profiles(released):
    _, path, _ = released
    manifest = orjson.loads((path / "manifest.json").read_bytes())
    assert "profiles" not in manifest
    manifest["counts"]["decisions"] = {}  # a dataset that selected no rows: no files, no splits
    (path / "manifest.json").write_bytes(orjson.dumps(manifest))
    assert verify_release(path) == []


def test_verify_reports_a_file_added_after_release(released):
    _, path, _ = released
    (path / "sft" / "extra.parquet").write_bytes(b"x")
    assert verify_release(path) == ["sft/extra.parquet: not in the manifest"]


def test_verify_reports_a_group_that_straddles_splits_even_if_hashes_match(tmp_path, monkeypatch):
    monkeypatch.setattr("pipelines.release.store.verify.proof_problems", lambda proof: [])
    req = request(sft([("train", "g1", "a"), ("test", "g1", "b")]), tmp_path / "staged")
    path = write_release(tmp_path / "exports", "20261121-0000000000", content_hash(req), req)
    assert any("group_id values appear in more than one split" in p for p in verify_release(path))


def test_identical_content_finds_the_existing_version(released, tmp_path):
    exports, path, frame = released
    again = request(frame, tmp_path / "again")
    assert existing_version(exports, content_hash(again)) == path.name
    other = request(frame, tmp_path / "other", salt="s2")
    assert existing_version(exports, content_hash(other)) is None


def test_interrupted_release_is_never_listed(tmp_path):
    """SIGKILL the writer after the datasets are written but before the rename."""
    code = (
        "import os, sys; os.environ['TURNLAKE_KILL_AT'] = 'release:before_rename'\n"
        "from pathlib import Path; import polars as pl\n"
        "from tests.unit.test_release_files import request, sft\n"
        "from pipelines.release.write import write_release, content_hash\n"
        "r = request(sft([('train', 'g1', 'a')]), Path(sys.argv[1]).parent / 'staged')\n"
        "write_release(Path(sys.argv[1]), '20261121-1111111111', content_hash(r), r)\n"
    )
    exports = tmp_path / "exports"
    proc = subprocess.run([sys.executable, "-c", code, str(exports)], cwd=os.getcwd(), check=False)
    assert proc.returncode == -signal.SIGKILL
    assert any(p.name.startswith(".tmp-") for p in exports.iterdir())
    assert complete_releases(exports) == [] and latest_release(exports) is None
    assert list_releases(exports).height == 0


def test_pull_copies_and_verifies_and_refuses_unknown_versions(released, tmp_path):
    exports, path, _ = released
    target, problems = pull_to_folder(ObjectRoot.parse(exports), path.name, tmp_path / "mine")
    assert problems == [] and (target / MANIFEST).exists()
    with pytest.raises(FileNotFoundError):
        pull_to_folder(ObjectRoot.parse(exports), "20990101-ffffffffff", tmp_path / "mine")


def test_split_proof_is_written_into_the_release(released):
    _, path, _ = released
    proof = {"overlaps": {"group_id": 0, "participant": 0, "prompt_hash": 0}, "salt": "s1"}
    assert orjson.loads((path / "split_proof.json").read_bytes()) == proof
    shutil.rmtree(path / "sft")
    assert "sft/train-b00000-p000.parquet: missing" in verify_release(path)
