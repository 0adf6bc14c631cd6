"""A release made again from unchanged inputs publishes nothing new (the release part store
gives the same content hash, and the release with it is reused); any changed input (config, gold)
publishes a new one."""

import shutil
from dataclasses import replace

import orjson
import pytest

from pipelines.config.settings import settings_from_config
from pipelines.gold.params import PARAMS
from pipelines.privacy.key import key_fingerprint
from pipelines.release.assemble import make_release
from pipelines.release.store.files import complete_releases, latest_release, read_manifest
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph.test_build_graph import PROJECT_CONFIG, clean_materialized


@pytest.fixture
def built(tmp_path, built_once):
    raw, data = clean_materialized(built_once, tmp_path / "built")
    config = tmp_path / "turnlake.toml"
    shutil.copy(PROJECT_CONFIG, config)
    return settings_from_config(raw, data, config)


def test_unchanged_inputs_publish_nothing_new(built):
    exports = Layout(built.data_root).exports
    made = latest_release(exports)  # the build's release step made it from these inputs
    first = make_release(built, today="20261121")
    assert not first.created and first.version == made
    again = make_release(built, today="20261122")
    assert not again.created and again.version == made
    assert complete_releases(exports) == [made]
    assert again.dropped_duplicate_prompts == first.dropped_duplicate_prompts


def test_changed_redaction_config_publishes_a_new_release(built):
    before = latest_release(Layout(built.data_root).exports)
    built.config_path.write_text(
        built.config_path.read_text() + '\n[privacy.redaction]\nkinds = ["email"]\n'
    )
    # settings are read once per build: the next build reads the changed file
    outcome = make_release(
        settings_from_config(built.raw_root, built.data_root, built.config_path), today="20261121"
    )
    assert outcome.created and outcome.version != before


def test_changed_release_settings_publish_a_new_release(built):
    outcome = make_release(replace(built, release_kto_include_neutral=True), today="20261121")
    assert outcome.created
    assert read_manifest(outcome.path)["config"]["release"]["kto_include_neutral"] is True


def test_changed_gold_parameters_publish_a_new_release(built):
    layout = Layout(built.data_root)
    gold = stored.snapshot(layout, "gold")
    params = orjson.loads(gold.meta[PARAMS]) | {"note": "override"}
    stored.publish(layout, "gold", {}, gold.meta | {PARAMS: orjson.dumps(params).decode()})
    outcome = make_release(built, today="20261121")
    assert outcome.created
    assert read_manifest(outcome.path)["config"]["rewards"]["note"] == "override"


def test_key_fingerprint_depends_on_the_key_and_does_not_contain_it():
    key = b"0123456789abcdef0123456789abcdef"
    assert key_fingerprint(key) != key_fingerprint(key[::-1])
    assert key.decode() not in key_fingerprint(key) and key.hex() not in key_fingerprint(key)
