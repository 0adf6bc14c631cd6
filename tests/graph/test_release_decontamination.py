"""A release with `[release] decontaminate`: the rows of the clean fixtures whose user text a
hand-written evaluation set paraphrases leave train and validation (test keeps them), every other
row stays; the card, the split proof and the config say so, and a from-scratch release agrees with
the incremental one; the CLI refuses an unreadable evaluation set with exit 2 naming it."""

from __future__ import annotations

import hashlib
import shutil

import orjson
import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.config.settings import settings_from_config
from pipelines.release.assemble import make_release
from pipelines.release.privatize import decontaminated
from pipelines.release.store import part_cache
from pipelines.release.store.files import SPLIT_PROOF, latest_release, read_manifest
from pipelines.reports.page import _decontamination_section
from pipelines.storage.layout import Layout
from tests.graph.test_build_graph import PROJECT_CONFIG, clean_materialized

# Paraphrases of two user texts of the clean fixtures, written by hand: a greeting added and the
# punctuation changed (found by 8-gram overlap), and a short question in other case (MinHash).
EVAL_JSONL = [
    {"prompt": "Hello! my router keeps dropping wi-fi, every evening"},
    {"messages": [{"role": "user", "content": "why is the sky BLUE"}]},
    {"prompt": "Name three prime numbers larger than one hundred."},  # in no fixture
]
PLANTED = ("My router keeps dropping Wi-Fi every evening.", "Why is the sky blue?")
CHATS = {"sft": "messages", "kto": "prompt", "preference": "prompt"}
TRAINED = ("train", "validation")


@pytest.fixture
def built(tmp_path, built_once):
    raw, data = clean_materialized(built_once, tmp_path / "built")
    config = tmp_path / "turnlake.toml"
    shutil.copy(PROJECT_CONFIG, config)
    (tmp_path / "evals").mkdir()
    body = b"".join(orjson.dumps(r) + b"\n" for r in EVAL_JSONL)
    (tmp_path / "evals" / "chat.jsonl").write_bytes(body)
    return settings_from_config(raw, data, config)


def _rows(release, name: str) -> pl.DataFrame:
    return pl.read_parquet(release / name / "*.parquet")


def _planted(frame: pl.DataFrame, column: str) -> pl.Series:
    """Whether a row's user messages hold a planted text (the hand-written predicate)."""
    users = pl.col(column).list.eval(
        pl.element().filter(pl.element().struct.field("role") == "user").struct.field("content")
    )
    return frame.select(users.list.eval(pl.element().is_in(PLANTED)).list.any()).to_series()


def _with_evals(settings):
    text = settings.config_path.read_text().replace(
        "[release]\n", '[release]\ndecontaminate = ["evals/chat.jsonl"]\n', 1
    )
    settings.config_path.write_text(text)
    return settings_from_config(settings.raw_root, settings.data_root, settings.config_path)


def test_planted_paraphrases_leave_train_and_validation_and_the_rest_stays(built):
    exports = Layout(built.data_root).exports
    before = exports / latest_release(exports)
    outcome = make_release(_with_evals(built), today="20261129")
    assert outcome.created
    left_expected = {}
    for name, column in CHATS.items():
        old, new = _rows(before, name), _rows(outcome.path, name)
        planted = _planted(old, column)
        leaving = planted & old.get_column("split").is_in(TRAINED)
        if leaving.any():
            left_expected[name] = int(leaving.sum())
        assert new.height == old.height - int(leaving.sum())
        assert not (_planted(new, column) & new.get_column("split").is_in(TRAINED)).any()
        # every other row is still there (ordered by its prompt hash and content)
        kept = old.filter(~leaving).get_column("prompt_hash").sort().to_list()
        assert new.get_column("prompt_hash").sort().to_list() == kept
    assert left_expected.get("sft") == 4  # two rows per planted text in the fixtures' sft
    proof = orjson.loads((outcome.path / SPLIT_PROOF).read_bytes())["decontamination"]
    assert proof["rows_left"] == {"evals/chat.jsonl": left_expected}
    body = (built.config_path.parent / "evals" / "chat.jsonl").read_bytes()
    config = read_manifest(outcome.path)["config"]["decontamination"]
    assert config["sets"] == [
        {"file": "evals/chat.jsonl", "sha256": hashlib.sha256(body).hexdigest()}
    ]
    card = (outcome.path / "README.md").read_text()
    assert "left the train and validation splits" in card and "`evals/chat.jsonl`: " in card
    (section,) = _decontamination_section(outcome.path)  # the build report's
    assert section.tables[0][1].rows() == [
        ("evals/chat.jsonl", name, n) for name, n in sorted(left_expected.items())
    ]


def test_a_from_scratch_release_agrees_and_an_edited_eval_set_makes_another(built):
    settings = _with_evals(built)
    first = make_release(settings, today="20261129")
    shutil.rmtree(part_cache.cache_root(Layout(settings.data_root)))
    again = make_release(settings, today="20261130")
    assert not again.created and again.version == first.version
    evals = settings.config_path.parent / "evals" / "chat.jsonl"
    evals.write_bytes(evals.read_bytes() + b'{"prompt": "Only on 5 GHz."}\n')
    edited = make_release(settings, today="20261130")
    assert edited.created and edited.version != first.version


def test_a_release_again_reads_each_units_matches_from_the_store(built, monkeypatch):
    settings = _with_evals(built)
    first = make_release(settings, today="20261129")

    def matched_again(*args, **kwargs):
        raise AssertionError("matched again although no unit changed")

    monkeypatch.setattr(decontaminated, "contaminated", matched_again)
    again = make_release(settings, today="20261130")
    assert not again.created and again.version == first.version


def test_no_eval_sets_leave_the_config_as_before(built):
    exports = Layout(built.data_root).exports
    config = read_manifest(exports / latest_release(exports))["config"]
    assert "decontamination" not in config
    assert _decontamination_section(exports / latest_release(exports)) == []


def test_the_cli_refuses_an_unreadable_eval_set_with_exit_two_naming_it(
    tmp_path, monkeypatch, capsys
):
    config = tmp_path / "turnlake.toml"
    config.write_text('[release]\ndecontaminate = ["evals/missing.jsonl"]\n')
    monkeypatch.setenv("TURNLAKE_CONFIG", str(config))
    monkeypatch.setenv("TURNLAKE_PSEUDONYM_KEY", "a-test-key-of-enough-bytes")
    code = main(["build", "--raw-root", str(tmp_path / "raw"), "--data-root", str(tmp_path / "d")])
    assert code == 2
    assert str(tmp_path / "evals" / "missing.jsonl") in capsys.readouterr().err
