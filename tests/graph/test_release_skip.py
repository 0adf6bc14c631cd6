"""An unchanged build does no release work; any changed input (config, gold, a forget rewrite)
does."""

import shutil
from dataclasses import replace

import orjson
import pytest

from pipelines.config.settings import settings_from_config
from pipelines.gold.params import PARAMS
from pipelines.release import assemble
from pipelines.release.assemble import make_release
from pipelines.release.plan.inputs import key_fingerprint
from pipelines.release.store.files import MANIFEST, latest_release, read_manifest
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph.test_build_graph import PROJECT_CONFIG, clean_materialized


@pytest.fixture
def built(tmp_path, built_once):
    raw, data = clean_materialized(built_once, tmp_path / "built")
    config = tmp_path / "turnlake.toml"
    shutil.copy(PROJECT_CONFIG, config)
    return settings_from_config(raw, data, config)


@pytest.fixture
def builds(monkeypatch):
    """Releases built (`release_request` calls: from whole tables or per partition alike)."""
    calls = []
    real = assemble.release_request

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(assemble, "release_request", counting)
    return calls


def test_unchanged_inputs_return_the_release_without_building_datasets(built, builds):
    exports = Layout(built.data_root).exports
    first = make_release(
        built, today="20261121"
    )  # the build's release step made it from these inputs
    assert builds == [] and not first.created and first.version == latest_release(exports)
    again = make_release(built, today="20261122")
    assert builds == [] and again.version == first.version and not again.created
    assert again.dropped_duplicate_prompts == first.dropped_duplicate_prompts
    assert read_manifest(again.path)["input_digest"]


def test_changed_redaction_config_builds_again(built, builds):
    make_release(built, today="20261121")
    built.config_path.write_text(
        built.config_path.read_text() + '\n[privacy.redaction]\nkinds = ["email"]\n'
    )
    # settings are read once per build: the next build reads the changed file
    make_release(
        settings_from_config(built.raw_root, built.data_root, built.config_path), today="20261121"
    )
    assert builds == [1]


def test_changed_release_settings_build_again(built, builds):
    make_release(built, today="20261121")
    outcome = make_release(replace(built, release_kto_include_neutral=True), today="20261121")
    assert builds == [1] and outcome.created
    assert read_manifest(outcome.path)["config"]["release"]["kto_include_neutral"] is True


def test_changed_gold_parameters_build_again(built, builds):
    make_release(built, today="20261121")
    layout = Layout(built.data_root)
    gold = stored.snapshot(layout, "gold")
    params = orjson.loads(gold.meta[PARAMS]) | {"note": "override"}
    stored.publish(layout, "gold", {}, gold.meta | {PARAMS: orjson.dumps(params).decode()})
    outcome = make_release(built, today="20261121")
    assert builds == [1] and outcome.created


def test_a_release_rewritten_by_forget_is_not_reused_for_its_old_inputs(built, builds):
    exports = Layout(built.data_root).exports
    make_release(built, today="20261121")
    release = exports / latest_release(exports)
    manifest = read_manifest(release) | {"deletion_log": [{"tombstone_id": "t", "rows_removed": 1}]}
    (release / MANIFEST).write_bytes(orjson.dumps(manifest))
    make_release(built, today="20261121")
    assert builds == [1]


def test_key_fingerprint_depends_on_the_key_and_does_not_contain_it():
    key = b"0123456789abcdef0123456789abcdef"
    assert key_fingerprint(key) != key_fingerprint(key[::-1])
    assert key.decode() not in key_fingerprint(key) and key.hex() not in key_fingerprint(key)
