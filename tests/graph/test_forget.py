"""`turnlake forget`: after it, no file under the data root — no Parquet file, no Delta table
version, no log — holds the subject's ids or texts, as-of reads from before it fail cleanly,
releases made before the request are rewritten and verify, and later builds keep the subject out."""

import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import orjson
import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.release.store.files import complete_releases, read_manifest
from pipelines.release.store.verify import verify_release
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.storage.subject_data import Forget, holder_of

CLEAN = Path(__file__).parents[1] / "fixtures" / "clean"


def parquet_files_mentioning(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*.parquet") if text in pl.read_parquet(p).write_ndjson()]


def files_holding(root: Path, needle: str) -> list[Path]:
    """Every file under `root` whose bytes hold `needle`, or, for Parquet, whose decoded rows do
    (compressed pages hide text from a byte search)."""
    found = []
    for path in (p for p in root.rglob("*") if p.is_file()):
        decoded = pl.read_parquet(path).write_ndjson() if path.suffix == ".parquet" else ""
        if needle.encode() in path.read_bytes() or needle in decoded:
            found.append(path)
    return found


def subject_texts(data: Path, participant: str) -> list[str]:
    """Long utterances of the participant's episodes that no other episode has."""
    layout = Layout(data)
    episodes = stored.read(layout, "silver", "episodes")
    theirs = episodes.filter(pl.col("group_id") == participant)["episode_id"]
    turns = stored.read(layout, "silver", "turns").filter(pl.col("text").str.len_chars() >= 40)
    mine = set(turns.filter(pl.col("episode_id").is_in(theirs))["text"])
    others = set(turns.filter(~pl.col("episode_id").is_in(theirs))["text"])
    return sorted(mine - others)


def openai_texts(release: Path) -> set[str]:
    """Every message text of the release's OpenAI files, decoded from their JSON lines."""
    texts = set()
    for path in (release / "openai_sft").glob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            texts |= {m["content"] for m in orjson.loads(line)["messages"]}
    return texts


def profile_split_rows(release: Path) -> dict[str, int]:
    """Rows per split of the study_sft profile's files, counted here from the files."""
    files = sorted((release / "profiles" / "study_sft").glob("*.parquet"))
    frame = pl.concat([pl.read_parquet(f, columns=["split", "group_id"]) for f in files])
    return dict(frame.group_by("split").len().iter_rows())


@pytest.fixture(scope="module")
def forgotten(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("forget")
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    config = tmp_path / "turnlake.toml"  # a profile: forget must rewrite its files and counts
    config.write_text('[release.profiles.study_sft]\nsources = ["study"]\ndatasets = ["sft"]\n')
    monkeypatch.setenv("TURNLAKE_CONFIG", str(config))
    raw, data = tmp_path / "raw", tmp_path / "data"
    shutil.copytree(CLEAN, raw)
    roots = ["--raw-root", str(raw), "--data-root", str(data)]
    assert main(["build", *roots, "--log-level", "ERROR"]) == 0
    participant = (
        stored.read(Layout(data), "silver", "episodes")
        .filter(pl.col("source") == "study")["group_id"]
        .sort()[0]
    )
    texts = subject_texts(data, participant)
    assert texts and all(files_holding(data, t) for t in [participant, *texts[:3]])
    before = complete_releases(Layout(data).exports)
    profile_rows = profile_split_rows(Layout(data).exports / before[-1])
    openai_before = openai_texts(Layout(data).exports / before[-1])
    sft_rows = read_manifest(Layout(data).exports / before[-1])["counts"]["sft"]
    # an old build report whose quarantine example quoted the subject's record
    old_report = Layout(data).reports / "run-before.html"
    old_report.parent.mkdir(parents=True, exist_ok=True)
    old_report.write_text(f"<td>{{&quot;participant&quot;: &quot;{participant}&quot;}}</td>")
    built_at = datetime.now(UTC).isoformat()
    time.sleep(0.01)  # the forget's snapshots are published strictly later
    assert main(["forget", "participant", participant, *roots]) == 0
    yield SimpleNamespace(
        raw=raw,
        data=data,
        participant=participant,
        texts=texts,
        before=before,
        profile_rows=profile_rows,
        openai_before=openai_before,
        sft_rows=sft_rows,
        built_at=built_at,
        roots=roots,
    )
    monkeypatch.undo()


def test_no_parquet_file_under_the_data_root_mentions_a_forgotten_participant(forgotten):
    assert parquet_files_mentioning(forgotten.data, forgotten.participant) == []


def test_no_file_under_the_data_root_holds_the_forgotten_ids_or_texts(forgotten):
    for needle in [forgotten.participant, *forgotten.texts]:
        assert files_holding(forgotten.data, needle) == [], needle


def test_every_table_keeps_only_the_current_version_and_as_of_before_forget_fails(
    forgotten, capsys
):
    layout = Layout(forgotten.data)
    for layer in stored.LAYERS:
        assert len(stored.history(layout, layer)) == 1
    code = main(["release", *forgotten.roots, "--as-of", forgotten.built_at])
    assert code == 2
    assert "no gold tables as of" in capsys.readouterr().err


def test_releases_made_before_forget_are_rewritten_with_a_deletion_log_and_verify(forgotten):
    exports = Layout(forgotten.data).exports
    before = forgotten.before
    assert before and set(before) <= set(complete_releases(exports))
    tombstone = orjson.loads(Layout(forgotten.data).tombstones.read_bytes().splitlines()[-1])
    for version in complete_releases(exports):
        assert verify_release(exports / version) == []
    logs = [read_manifest(exports / v).get("deletion_log", []) for v in before]
    assert all(entry["tombstone_id"] == tombstone["tombstone_id"] for log in logs for entry in log)


def test_tombstone_holds_no_subject_id_and_later_builds_keep_the_subject_out(forgotten):
    data, participant = forgotten.data, forgotten.participant
    assert participant not in Layout(data).tombstones.read_text()
    assert main(["build", *forgotten.roots, "--log-level", "ERROR"]) == 0
    assert parquet_files_mentioning(data, participant) == []


def test_a_profile_loses_the_subjects_rows_and_its_manifest_counts_follow(forgotten):
    release = Layout(forgotten.data).exports / forgotten.before[-1]
    after = profile_split_rows(release)
    assert sum(after.values()) < sum(forgotten.profile_rows.values())  # the subject had rows
    counts = read_manifest(release)["profiles"]["study_sft"]["counts"]
    assert {split: n for split, n in counts.items() if n} == after  # an empty split's file: 0


def test_forget_removes_the_subjects_text_from_the_openai_files_and_their_manifest_follows(
    forgotten,
):
    release = Layout(forgotten.data).exports / forgotten.before[-1]
    theirs = [t for t in forgotten.texts if any(t in text for text in forgotten.openai_before)]
    assert theirs  # the subject's turns were lines of openai_sft before the forget
    after = openai_texts(release)
    assert [t for t in theirs if any(t in text for text in after)] == []
    assert after  # the other subjects' lines are still there
    manifest = read_manifest(release)
    lines = {
        p.stem: len(p.read_bytes().splitlines()) for p in (release / "openai_sft").glob("*.jsonl")
    }
    assert manifest["openai"]["openai_sft"]["counts"] == lines
    sft = pl.read_parquet(release / "sft" / "*.parquet", columns=["split"])
    left_out = manifest["openai"]["openai_sft"]["left_out"]
    assert sum(lines.values()) + sum(left_out.values()) == sft.height  # from the rewritten rows
    assert verify_release(release) == []


def test_a_rewritten_release_still_loads_with_datasets_by_its_card(forgotten, tmp_path):
    """`datasets` checks each split's rows against the card's sizes: the card follows the
    rewritten files (a stale size fails with NonMatchingSplitsSizesError)."""
    datasets = pytest.importorskip("datasets")
    release = Layout(forgotten.data).exports / forgotten.before[-1]
    counts = read_manifest(release)["counts"]["sft"]
    assert sum(counts.values()) < sum(forgotten.sft_rows.values())  # the subject had sft rows
    loaded = datasets.load_dataset(str(release), "sft", cache_dir=str(tmp_path))
    assert {s: d.num_rows for s, d in loaded.items()} == {s: n for s, n in counts.items() if n}


def holds(path: Path, needle: str) -> bool:
    """The file's bytes hold `needle`, or its decoded rows do (Parquet pages are compressed)."""
    if needle.encode() in path.read_bytes():
        return True
    return path.suffix == ".parquet" and needle in pl.read_parquet(path).write_ndjson()


@pytest.fixture(scope="module")
def forgotten_in_demo(demo_warehouse, tmp_path_factory):
    """A copy of the built demo, a scenario forgotten in it: its id names raw files, so it is
    in release manifests, the listing cache and the build report as well as in rows."""
    tmp = tmp_path_factory.mktemp("forget-demo")
    data, cache = tmp / "data", tmp / "cache"
    shutil.copytree(demo_warehouse, data, symlinks=True)
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp))
    monkeypatch.setenv("TURNLAKE_CACHE_DIR", str(cache))  # this machine's cache folder: walked too
    for name in ("TURNLAKE_RAW_ROOT", "TURNLAKE_DATA_ROOT", "TURNLAKE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    layout = Layout(data)
    scenario = (
        stored.read(layout, "silver", "episodes")
        .filter(pl.col("source") == "scenario")["native_id"]
        .sort()[0]
    )
    assert (layout.raw / "scenarios").is_dir()  # the demo's raw root is the default one
    # before: the id is in holders forget rewrites, deletes or purges, beyond the raw root
    before = {h.attr for p in _files(data) if holds(p, scenario) for h in [holder_of(layout, p)]}
    assert {"exports", "table_dir", "bronze_dir"} <= before
    assert main(["forget", "scenario", scenario, "--data-root", str(data)]) == 0
    yield SimpleNamespace(data=data, cache=cache, scenario=scenario, layout=layout)
    monkeypatch.undo()


def _files(*roots: Path) -> list[Path]:
    return sorted(p for root in roots if root.exists() for p in root.rglob("*") if p.is_file())


def test_after_forget_every_file_of_the_demo_belongs_to_a_registered_holder(forgotten_in_demo):
    # a cache added without registering it in storage/subject_data.py fails here
    layout = forgotten_in_demo.layout
    files = _files(forgotten_in_demo.data, forgotten_in_demo.cache)
    assert [p for p in files if holder_of(layout, p) is None] == []
    deleted = [p for p in files if holder_of(layout, p).forget is Forget.DELETED]
    assert deleted == []  # what forget deletes whole is gone


def test_after_forget_no_file_of_the_demo_holds_the_scenario_id_but_the_raw_root(
    forgotten_in_demo,
):
    layout, scenario = forgotten_in_demo.layout, forgotten_in_demo.scenario
    files = _files(forgotten_in_demo.data, forgotten_in_demo.cache)
    holding = [p for p in files if holds(p, scenario)]
    assert holding, "the raw root still names the scenario (turnlake never deletes raw files)"
    assert [p for p in holding if not holder_of(layout, p).may_keep_subject] == []
