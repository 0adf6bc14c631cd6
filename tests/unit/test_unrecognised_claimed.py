"""Raw files no adapter reads, after an ingest: the paths the ingests discovered are not offered to
the adapters again, and a file added since is still judged by the adapters, not by that memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.config.settings import Settings
from pipelines.ingest import claimed
from pipelines.ingest.claimed import unrecognised_files
from pipelines.ingest.incremental import ingest_source
from pipelines.sources import listing

CONVERSATION = {"conversation_id": "c-1", "turns": [{"role": "user", "content": "hi"}]}


@pytest.fixture(autouse=True)
def fresh_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("TURNLAKE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(claimed, "_DISCOVERED", {})  # nothing remembered, as in a new process


def _write(raw: Path, rel: str, text: str = "{}\n") -> None:
    (raw / rel).parent.mkdir(parents=True, exist_ok=True)
    (raw / rel).write_text(text)


@pytest.fixture
def ingested(tmp_path) -> Path:
    """A raw root whose dialogue and social_rl files were ingested, beside unread files."""
    raw = tmp_path / "raw"
    _write(raw, "dialogues/tutoring/c-1.jsonl", json.dumps(CONVERSATION) + "\n")
    _write(raw, "outputs/run-1/meta.json")
    _write(raw, "outputs/run-1/plot.png", "png")  # not a text suffix: no attachment
    _write(raw, "notes.txt", "by hand")
    _write(raw, "consent/optouts.jsonl", "")  # the registry is read, not unclaimed
    _write(raw, ".DS_Store", "")  # hidden: not raw data
    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    for source in ("dialogue", "social_rl"):
        ingest_source(source, settings, "run-1")
    return raw


def test_a_file_added_after_the_ingest_is_judged_by_its_adapter_not_by_the_memory(ingested):
    _write(ingested, "dialogues/tutoring/c-2.jsonl")  # claimed by dialogue, never ingested
    _write(ingested, "sharegpt/x.jsonl")  # claimed by no adapter
    assert unrecognised_files(ingested) == [
        "notes.txt",
        "outputs/run-1/plot.png",
        "sharegpt/x.jsonl",
    ]


def test_only_the_paths_no_ingest_discovered_are_offered_to_the_adapters_again(
    ingested, monkeypatch
):
    offered: list[list[str]] = []
    only_among = listing.only_among

    def spy(rel_paths):
        offered.append(sorted(rel_paths))
        return only_among(rel_paths)

    monkeypatch.setattr(listing, "only_among", spy)
    _write(ingested, "dialogues/tutoring/c-2.jsonl")
    assert unrecognised_files(ingested) == ["notes.txt", "outputs/run-1/plot.png"]
    assert offered == [["dialogues/tutoring/c-2.jsonl", "notes.txt", "outputs/run-1/plot.png"]]


def test_without_an_ingest_in_this_process_every_path_is_judged(tmp_path):
    raw = tmp_path / "raw"
    for rel in ("dialogues/tutoring/c-1.jsonl", "outputs/run-1/meta.json", "notes.txt"):
        _write(raw, rel)
    assert unrecognised_files(raw) == ["notes.txt"]


def test_a_source_listing_among_given_paths_keeps_the_matching_ones_under_each_prefix(tmp_path):
    among = [
        "outputs/r1/meta.json",
        "outputs/r1/meta.json.bak",  # a pattern matches the whole path or not at all
        "outputs/r1/deep/meta.json",  # `*` stays inside one folder
        "outputs2/r1/meta.json",  # shares the prefix's letters, not its folder
        "decisions/a/b/c.sqlite",
        "zz/c.sqlite",
    ]
    patterns = ["outputs/*/meta.json", "decisions/**/*.sqlite"]
    with listing.only_among(among):  # the root is never walked: it need not exist
        found = listing.local_matches(tmp_path / "absent", patterns)
    assert found == ["decisions/a/b/c.sqlite", "outputs/r1/meta.json"]


def test_one_regex_for_many_patterns_matches_what_any_of_them_matches():
    regex = listing.any_pattern(["outputs/*/round*_social_rl.json", "prar/outputs/*/*.md"])
    assert [
        bool(regex.fullmatch(path))
        for path in (
            "outputs/r1/round3_social_rl.json",
            "prar/outputs/r1/notes.md",
            "outputs/r1/notes.md",
            "prar/outputs/r1/round3_social_rl.json",
            "outputs/r1/round3_social_rl.json.tmp",
        )
    ] == [True, True, False, False, False]


def test_a_builds_listing_of_the_tree_is_judged_without_walking_the_tree_again(
    ingested, monkeypatch
):
    def no_walk(raw_root):
        raise AssertionError("the tree was walked again")

    monkeypatch.setattr(listing, "all_local_files", no_walk)
    _write(ingested, "late.txt")  # written after the build's listing: not in it
    listed = (
        ".DS_Store",
        ".git/HEAD",
        "consent/optouts.jsonl",
        "dialogues/tutoring/.c-1.jsonl.swp",
        "dialogues/tutoring/c-1.jsonl",
        "notes.txt",
        "outputs/run-1/meta.json",
        "outputs/run-1/plot.png",
    )
    # hidden files and folders are not raw data, the registry and the ingested files are claimed
    assert unrecognised_files(ingested, listed) == ["notes.txt", "outputs/run-1/plot.png"]
