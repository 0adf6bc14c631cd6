"""`turnlake release --as-of T`: a release from the tables as they were at T (feedback that arrived
later left out), whose manifest names the table versions read; rebuilt from those versions it has
the content hash the release made at T had."""

import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

import turnlake
from pipelines.cli.main import main
from pipelines.config.settings import Settings
from pipelines.release.assemble import release_request
from pipelines.release.store.files import latest_release, read_manifest
from pipelines.release.write import content_hash
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

CLEAN = Path(__file__).parents[1] / "fixtures" / "clean"


def feedback_arrives_later(tmp: Path, build) -> tuple[Path, Path, dict, str]:
    """The clean fixtures under `tmp`/raw built into `tmp`/data without the dialogue feedback
    (`build(raw, data, 1)`), the time T after it, then built again once the feedback arrived
    (`build(raw, data, 2)`): raw, data, the first release's manifest and T."""
    raw, data, held_back = tmp / "raw", tmp / "data", tmp / "feedback"
    shutil.copytree(CLEAN, raw)
    shutil.move(raw / "feedback", held_back)
    build(raw, data, 1)
    exports = Layout(data).exports
    first = read_manifest(exports / latest_release(exports))
    time.sleep(0.01)
    moment = datetime.now(UTC).isoformat()
    time.sleep(0.01)
    shutil.move(held_back, raw / "feedback")
    build(raw, data, 2)
    return raw, data, first, moment


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    """A build without the dialogue feedback, the time T after it, then a build once the
    feedback has arrived; the first release's manifest and the time T."""
    tmp_path = tmp_path_factory.mktemp("as_of")
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))

    def build(raw: Path, data: Path, _: int) -> None:
        roots = ["--raw-root", str(raw), "--data-root", str(data)]
        assert main(["build", *roots, "--log-level", "ERROR"]) == 0

    raw, data, first, moment = feedback_arrives_later(tmp_path, build)
    roots = ["--raw-root", str(raw), "--data-root", str(data)]
    yield raw, data, roots, first, moment
    monkeypatch.undo()


def test_the_later_build_changed_the_release(two_builds):
    _, data, _, first, _ = two_builds
    exports = Layout(data).exports
    second = read_manifest(exports / latest_release(exports))
    assert second["content_hash"] != first["content_hash"]
    assert second["table_versions"] != first["table_versions"]


def test_manifest_records_the_table_versions_of_every_layer(two_builds):
    _, data, _, first, moment = two_builds
    versions = first["table_versions"]
    assert set(versions) == {"silver", "gold", "splits"}
    assert versions == stored.versions(Layout(data), stored.parse_time(moment))
    assert "turns" in versions["silver"] and "turn_rewards" in versions["gold"]


def test_rebuilding_from_the_versions_in_force_then_gives_the_same_content_hash(two_builds):
    raw, data, _, first, moment = two_builds
    settings = Settings(raw_root=raw, data_root=data)
    request, _ = release_request(settings, as_of=stored.parse_time(moment))
    assert content_hash(request) == first["content_hash"]
    assert request.table_versions == first["table_versions"]


def test_as_of_release_names_the_raw_files_of_then_not_todays(two_builds):
    raw, data, _, first, moment = two_builds
    later = read_manifest(Layout(data).exports / latest_release(Layout(data).exports))
    request, _ = release_request(
        Settings(raw_root=raw, data_root=data), as_of=stored.parse_time(moment)
    )
    feedback_files = sorted(
        p.relative_to(raw).as_posix() for p in (raw / "feedback").rglob("*") if p.is_file()
    )
    assert feedback_files, "the clean fixtures hold dialogue feedback files"
    named_then = {row["file"] for row in request.raw_fingerprints}
    assert not named_then & set(feedback_files)  # they arrived after T
    assert set(feedback_files) <= {row["file"] for row in later["raw_files"]}
    assert request.raw_fingerprints == first["raw_files"]


def test_release_as_of_names_the_release_made_then(two_builds):
    raw, data, _, first, moment = two_builds
    state = turnlake.release(raw_root=raw, data_root=data, as_of=moment)
    assert state.version == first["version"] and not state.created


def test_as_of_before_any_build_or_not_a_timestamp_is_refused_with_exit_2(two_builds, capsys):
    _, _, roots, _, _ = two_builds
    assert main(["release", *roots, "--as-of", "2000-01-01T00:00:00Z"]) == 2
    assert "no gold tables as of 2000-01-01" in capsys.readouterr().err
    assert main(["release", *roots, "--as-of", "last tuesday"]) == 2
    assert "not an ISO 8601 timestamp" in capsys.readouterr().err
