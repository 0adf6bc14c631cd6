"""An as-of release is of past data: it never becomes LATEST (locally or in a release store),
`releases` lists it as such, and it is built from the tables as they were stored then (at T
stored whole by an earlier version, in partitions now): a table stored whole is one partition."""

import shutil
from datetime import UTC, datetime, timedelta

import pytest

import turnlake
from pipelines.config.settings import Settings
from pipelines.release.assemble import release_request
from pipelines.release.store.files import LATEST, latest_release, read_manifest
from pipelines.release.write import content_hash
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.warehouse.garbage import collect_garbage
from tests.graph._earlier_layout import store_whole
from tests.graph.test_partitions_graph import _build
from tests.graph.test_release_as_of import feedback_arrives_later


@pytest.fixture(scope="module")
def past_release(tmp_path_factory):
    """A build without the dialogue feedback whose tables an earlier version then stored whole,
    the time T after it, a build in 4 partitions once the feedback arrived; then the first
    release is removed (as if pruned) and released again as of T, so it is written anew. Yields
    the first and second manifests, the as-of outcome, and the roots."""
    tmp = tmp_path_factory.mktemp("as_of_latest")
    env = pytest.MonkeyPatch()
    env.setenv("DAGSTER_HOME", str(tmp))

    def build(raw, data, n):
        _build(raw, data, shards=1 if n == 1 else 4)
        if n == 1:
            store_whole(data)

    raw, data, first, moment = feedback_arrives_later(tmp, build)
    exports = Layout(data).exports
    second = read_manifest(exports / latest_release(exports))
    shutil.rmtree(exports / first["version"])
    state = turnlake.release(raw_root=raw, data_root=data, as_of=moment)
    yield first, second, state, data, moment
    env.undo()


def test_the_builds_made_two_different_releases(past_release):
    first, second, _, _, _ = past_release
    assert first["content_hash"] != second["content_hash"]
    assert "as_of" not in first and "as_of" not in second


def test_an_as_of_release_is_written_but_latest_keeps_the_newest_current_one(past_release):
    first, second, state, data, moment = past_release
    exports = Layout(data).exports
    assert state.created and state.version == first["version"]
    assert (
        read_manifest(exports / state.version)["as_of"]
        == datetime.fromisoformat(moment).isoformat()
    )
    assert (exports / LATEST).read_text().strip() == second["version"]
    assert latest_release(exports) == second["version"]


def test_without_a_latest_pointer_the_newest_current_release_is_latest(past_release, tmp_path):
    _, second, state, data, _ = past_release
    copy = tmp_path / "exports"
    shutil.copytree(Layout(data).exports, copy)
    (copy / LATEST).unlink()
    # the as-of release is the newest by creation time, yet not of current data
    assert read_manifest(copy / state.version)["created_at"] > second["created_at"]
    assert latest_release(copy) == second["version"]


def test_releases_lists_the_as_of_release_as_such(past_release):
    _, second, state, data, moment = past_release
    listed = {row["version"]: row for row in turnlake.releases(data_root=data).to_dicts()}
    assert listed[state.version]["as_of"] == datetime.fromisoformat(moment).isoformat()
    assert listed[state.version]["latest"] is False
    assert listed[second["version"]]["as_of"] is None
    assert listed[second["version"]]["latest"] is True


def test_publishing_an_as_of_release_to_a_store_leaves_its_latest(past_release, tmp_path):
    _, second, state, data, _ = past_release
    store = tmp_path / "store"
    store.mkdir()
    turnlake.publish(second["version"], data_root=data, to=store)
    turnlake.publish(state.version, data_root=data, to=store)
    assert (store / LATEST).read_text().strip() == second["version"]


def test_an_as_of_release_of_tables_stored_whole_reads_them_as_one_partition(past_release):
    """Tables were stored whole at T: the release holds the rows of the one made then from the
    same data in partitions (same content hash), in the files of one partition (batch 0)."""
    first, _, state, data, _ = past_release
    release = Layout(data).exports / state.version
    manifest = read_manifest(release)
    assert manifest["table_versions"]["silver"] != first["table_versions"]["silver"]
    assert manifest["content_hash"] == first["content_hash"]
    assert manifest["counts"] == first["counts"]
    data_files = [f["path"] for f in manifest["files"] if f["path"].endswith(".parquet")]
    assert "sft/train-b00000-p000.parquet" in data_files
    # every file of rows is batch 0's (an empty split's file belongs to no batch)
    assert all("-b00000-p000" in path for path in data_files if not path.endswith("-empty.parquet"))


def test_retention_keeps_what_a_release_names_so_its_as_of_rebuild_has_the_same_hash(
    past_release, tmp_path
):
    """A garbage pass with `keep_days = 0` on a clock a day ahead keeps only the current
    snapshots and those the releases name: the release as of T rebuilds with its content hash."""
    first, _, _, data, moment = past_release
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    layout = Layout(copy)
    collect_garbage(layout, keep_days=0, now=datetime.now(UTC) + timedelta(days=1))
    settings = Settings(raw_root=tmp_path / "raw", data_root=copy)
    request, _ = release_request(settings, as_of=stored.parse_time(moment))
    assert content_hash(request) == first["content_hash"]
