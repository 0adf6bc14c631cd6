"""The OpenAI fine-tuning files of a release (pipelines/release/store/openai_files.py), on releases
written from hand-made rows: one file per split, empty where the split has no rows, listed in the
manifest with their lines and the rows left out; `verify` catches a changed byte; the
trainability checks judge every line by OpenAI's rules (trainability/openai_lines.py) and refuse
a release with a broken one."""

from __future__ import annotations

import hashlib
import json
from functools import partial
from pathlib import Path

import orjson
import polars as pl
import pytest
import yaml

from pipelines.release.assemble import _trainable
from pipelines.release.build.request import ReleaseRequest
from pipelines.release.build.staged import BATCH, Source, stage
from pipelines.release.store import openai_files
from pipelines.release.store.files import MANIFEST, complete_releases
from pipelines.release.store.verify import verify_release
from pipelines.release.trainability.folder import trainability_problems
from pipelines.release.trainability.openai_lines import chat_fault, preference_fault
from pipelines.release.trainability.problems import UntrainableRelease
from pipelines.release.write import content_hash, write_release
from tests.unit._openai_examples import ASSISTANT, USER, pair

VERSION = "20261121-0000000000"
MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))


def _chat(*pairs: tuple[str, str]) -> list[dict]:
    return [{"role": role, "content": content} for role, content in pairs]


def _sft(rows: list[tuple[str, list[dict]]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "split": [split for split, _ in rows],
            "turn_id": [f"t{i}" for i in range(len(rows))],
            "group_id": [f"g{i}" for i in range(len(rows))],
            "messages": [messages for _, messages in rows],
        },
        schema_overrides={"messages": MESSAGES},
    )


def _verify(release: Path) -> list[str]:
    """What `verify` finds of the files' bytes and rows (the hand-made split proof is no proof)."""
    return [p for p in verify_release(release) if not p.startswith("split proof:")]


def _release(tmp_path: Path, sft: pl.DataFrame, check=None) -> Path:
    """A release of this `sft` alone, every dataset with a train and a test file."""
    rows = sft.with_columns(pl.lit(0, pl.Int64).alias(BATCH))
    source = Source(0, rows.schema, lambda: rows, slice=0)
    staged = stage({"sft": [source]}, tmp_path / "staged", {}, splits=("train", "test"))
    request = ReleaseRequest(staged, {"salt": "s"}, {"release": {}}, [], "0.1.0", "abc")
    return write_release(tmp_path / "exports", VERSION, content_hash(request), request, check)


TRAINED = _chat(("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2"))


def test_each_split_has_its_file_and_the_manifest_its_lines_and_the_rows_left_out(tmp_path):
    sft = _sft(
        [
            ("train", TRAINED),
            ("train", _chat(("user", "q"), ("assistant", "a"), ("user", "still asking"))),
        ]
    )
    release = _release(tmp_path, sft)
    folder = release / "openai_sft"
    # the kept row, written here from OpenAI's chat format: the last assistant message trained
    assert (folder / "train.jsonl").read_text() == (
        '{"messages":[{"role":"user","content":"q1"},'
        '{"role":"assistant","content":"a1","weight":0},'
        '{"role":"user","content":"q2"},'
        '{"role":"assistant","content":"a2","weight":1}]}\n'
    )
    assert (folder / "test.jsonl").read_bytes() == b""  # a split without rows: an empty file
    manifest = orjson.loads((release / MANIFEST).read_bytes())
    parts = manifest["openai"]["openai_sft"].pop("parts")
    assert manifest["openai"] == {
        "openai_sft": {
            "dataset": "sft",
            "path": "openai_sft",
            "format": 1,
            "counts": {"train": 1, "test": 0},
            "left_out": {"not_ending_with_assistant": 1},
        }
    }
    # where each Parquet file's lines are (offset, bytes, lines), what it left out
    sha256 = {f["path"]: f["sha256"] for f in manifest["files"]}
    line = len((folder / "train.jsonl").read_bytes())
    assert parts == {
        path: {
            "sha256": sha256[path],
            "lines": {"train": [0, line, 1]} if path.startswith("sft/train") else {},
            "left_out": {"not_ending_with_assistant": 1} if path.startswith("sft/train") else {},
        }
        for path in sha256
        if path.startswith("sft/")
    }
    listed = {f["path"]: f["rows"] for f in manifest["files"] if f["path"].endswith(".jsonl")}
    assert listed == {"openai_sft/train.jsonl": 1, "openai_sft/test.jsonl": 0}
    assert not (release / "openai_preference").exists()  # this release has no preference rows
    card = (release / "README.md").read_text()
    assert "| `openai_sft` | `sft` | train 1, test 0 | not_ending_with_assistant 1 |" in card


def test_the_folder_card_lists_the_splits_with_lines_and_the_features(tmp_path):
    release = _release(tmp_path, _sft([("train", TRAINED)]))
    text = (release / "openai_sft" / "README.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "train.jsonl"}]}
    ]
    message = [
        {"name": "role", "dtype": "string"},
        {"name": "content", "dtype": "string"},
        {"name": "weight", "dtype": "int64"},
    ]
    assert meta["dataset_info"]["features"] == [{"name": "messages", "list": message}]


def test_verify_fails_when_a_byte_of_a_jsonl_file_changes(tmp_path):
    release = _release(tmp_path, _sft([("train", TRAINED)]))
    assert _verify(release) == []
    path = release / "openai_sft" / "train.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"a2"', b'"A2"'))
    assert _verify(release) == ["openai_sft/train.jsonl: sha256 differs from the manifest"]


def test_verify_counts_the_lines_of_a_jsonl_file(tmp_path):
    release = _release(tmp_path, _sft([("train", TRAINED)]))
    path = release / "openai_sft" / "train.jsonl"
    path.write_bytes(path.read_bytes() * 2)  # a line more, the manifest's hash made to match
    manifest = orjson.loads((release / MANIFEST).read_bytes())
    for entry in manifest["files"]:
        if entry["path"] == "openai_sft/train.jsonl":
            entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (release / MANIFEST).write_bytes(orjson.dumps(manifest))
    assert _verify(release) == ["openai_sft/train.jsonl: row count differs from the manifest"]


def test_a_line_that_breaks_openais_rules_refuses_the_release(tmp_path, monkeypatch):
    """A converter that writes a line OpenAI would reject: nothing is published, and the
    problem names the file, the rule and the line."""

    def ending_with_the_user(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
        line = '{"messages":[{"role":"user","content":"q"}]}'
        return frame.select("split", pl.lit(line).alias("line")), {}

    broken = openai_files.Format("sft", ("split", "messages"), ending_with_the_user)
    monkeypatch.setitem(openai_files.FORMATS, "openai_sft", broken)
    with pytest.raises(UntrainableRelease) as raised:
        _release(tmp_path, _sft([("train", TRAINED)]), partial(_trainable, include_neutral=False))
    assert (
        "openai_sft/train.jsonl: 1 lines break OpenAI's format (the last message is not the "
        "assistant's), e.g. lines [1]"
    ) in str(raised.value)
    assert complete_releases(tmp_path / "exports") == []


def test_a_release_folder_with_a_broken_line_is_not_trainable(tmp_path):
    release = _release(tmp_path, _sft([("train", TRAINED), ("train", TRAINED)]))
    assert trainability_problems(release) == []
    path = release / "openai_sft" / "train.jsonl"
    first, second = path.read_bytes().splitlines()
    path.write_bytes(first + b"\n" + second[:-5] + b"\n")  # the second line cut short
    assert trainability_problems(release) == [
        "openai_sft/train.jsonl: 1 lines break OpenAI's format (not JSON), e.g. lines [2]"
    ]


def _line(example: dict) -> dict:
    return json.loads(json.dumps(example))


@pytest.mark.parametrize(
    ("example", "fault"),
    [
        ({"messages": [USER, ASSISTANT]}, None),
        ({"messages": [USER, ASSISTANT | {"weight": 1}]}, None),
        ({"messages": [USER]}, "the last message is not the assistant's"),
        ({"messages": []}, "no messages"),
        ({"messages": [USER, ASSISTANT], "id": 1}, "not an object of `messages` alone"),
        ({"messages": [USER | {"content": " "}, ASSISTANT]}, "a message has empty content"),
        ({"messages": [USER | {"content": ""}, ASSISTANT]}, "a message has empty content"),
        ({"messages": [USER | {"content": "\u3000\n"}, ASSISTANT]}, "a message has empty content"),
        ({"messages": [USER | {"content": 5}, ASSISTANT]}, "a message has empty content"),
        ({"messages": [USER | {"name": "x"}, ASSISTANT]}, "a message has the unknown key 'name'"),
        ({"prompt": [USER, ASSISTANT]}, "not an object of `messages` alone"),
        (
            {"messages": [{"role": "tool", "content": "x"}, ASSISTANT]},
            "a message has the role 'tool'",
        ),
        (
            {"messages": [USER | {"weight": 1}, ASSISTANT]},
            "a weight other than 0 or 1, or on a message not the assistant's",
        ),
        (
            {"messages": [USER, ASSISTANT | {"weight": 2}]},
            "a weight other than 0 or 1, or on a message not the assistant's",
        ),
        (
            {"messages": [USER, ASSISTANT | {"weight": 0}]},
            "no assistant message is trained (weight 1)",
        ),
    ],
)
def test_chat_lines_are_judged_by_openais_chat_format(example, fault):
    assert chat_fault(_line(example)) == fault


@pytest.mark.parametrize(
    ("example", "fault"),
    [
        (pair(), None),
        (pair(input={"messages": [USER, ASSISTANT]}), "input: the last message is not the user's"),
        (pair(preferred_output=[ASSISTANT, ASSISTANT]), "`preferred_output` is not one message"),
        (
            pair(non_preferred_output=[USER]),
            "non_preferred_output: the last message is not the assistant's",
        ),
        (
            pair(preferred_output=[ASSISTANT | {"weight": 1}]),
            "preferred_output: a message has the unknown key 'weight'",
        ),
        (
            {"input": {"messages": [USER]}, "preferred_output": [ASSISTANT]},
            "not an object of ['input', 'non_preferred_output', 'preferred_output']",
        ),
    ],
)
def test_preference_lines_are_judged_by_openais_preference_format(example, fault):
    assert preference_fault(_line(example)) == fault
