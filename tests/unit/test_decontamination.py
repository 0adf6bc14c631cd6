"""Decontamination (`[release] decontaminate`): training rows whose user text overlaps an
evaluation prompt (open-instruct's n-gram overlap, or a MinHash near-duplicate) leave train and
validation; test keeps them; unrelated rows stay. Evaluation sets are JSONL or Parquet with a
`prompt` or `messages` field; an unreadable one is an error naming the file."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.config.release import Decontamination
from pipelines.config.settings import (
    Settings,
    SettingsError,
    settings_from_model,
    validate_config,
)
from pipelines.partitions.assign import PARTITION
from pipelines.release.privatize.decontaminated import (
    EvalSets,
    config_part,
    drop_matched,
    eval_sets,
    matched,
    proof_part,
    user_texts,
)
from pipelines.similarity.decontaminate import contaminated
from pipelines.similarity.eval_sets import EvalSetError, read_eval_set
from pipelines.similarity.minhash import MinHashParams

PLANTED = "Write a short poem about the autumn rain falling on the old stone bridge in Prague."
PARAPHRASES = [
    "write a short poem about the autumn rain falling on the old stone bridge in prague",  # punct.
    "Hi there! Write a short poem about the autumn rain falling on the old stone bridge in Prague.",
    "Write a short poem about the autumn rain falling on the old stone bridge in Vienna.",  # name
    # word order
    "Write a poem, short, about the autumn rain falling on the old stone bridge in Prague.",
]
UNRELATED = [
    "What is the capital of France?",
    "Write a python function that reverses a linked list in place.",
    "Write a short story about a dragon who learns to bake bread.",  # shares "write a short"
]
TEXTS = [PLANTED, *PARAPHRASES, *UNRELATED]
PROMPTS = pl.DataFrame({"prompt_id": [0], "prompt": [PLANTED]})
FOUND = [0, 1, 2, 3, 4]  # the planted prompt and its four paraphrases, by hand


def _texts() -> pl.DataFrame:
    return pl.DataFrame({"text_id": list(range(len(TEXTS))), "text": TEXTS})


def _found(frame: pl.DataFrame) -> list[int]:
    return sorted(frame.get_column("text_id").to_list())


def test_the_planted_prompt_and_its_paraphrases_are_found_and_unrelated_texts_are_not():
    found = contaminated(_texts(), PROMPTS, 8, 0.5, MinHashParams())
    assert _found(found) == FOUND
    assert set(found.get_column("prompt_id").to_list()) == {0}


def test_ngram_overlap_alone_finds_them_as_open_instruct_scores_it():
    # MinHash off in effect (only identical shingle sets reach 1.0 ... and then 0 bands of luck):
    # a threshold above any estimate leaves the n-gram test alone
    off = MinHashParams(threshold=1.0, num_perm=128, bands=1)
    assert _found(contaminated(_texts(), PROMPTS, 8, 0.5, off)) == FOUND
    # 16 words. The name change leaves words 0-14 covered (15 of 16), the word order change words
    # 4-15 (12 of 16): a share above 15/16 takes only the texts holding every 8-gram
    assert _found(contaminated(_texts(), PROMPTS, 8, 15 / 16, off)) == [0, 1, 2]
    assert _found(contaminated(_texts(), PROMPTS, 8, 12 / 16, off)) == [0, 1, 2, 3]


def test_minhash_alone_finds_the_near_duplicates():
    # no 64-word n-gram in any text: only MinHash can match
    found = _found(contaminated(_texts(), PROMPTS, 64, 0.5, MinHashParams()))
    # Jaccard of 3-word shingles with the planted text, by hand: punctuation 14/14, greeting 14/16,
    # name 13/15, word order 10/18 (four shingles each side differ)
    assert found == FOUND
    # at a threshold of 0.9 only the texts whose shingles are the planted ones stay
    assert _found(contaminated(_texts(), PROMPTS, 64, 0.5, MinHashParams(threshold=0.9))) == [0, 1]


def test_a_prompt_shorter_than_the_ngram_is_found_by_minhash_only():
    prompts = pl.DataFrame({"prompt_id": [7], "prompt": ["what is the capital of france"]})
    found = contaminated(_texts(), prompts, 8, 0.5, MinHashParams())
    assert found.rows() == [(5, 7)]


# -------------------------------------------------------------- evaluation sets read


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_jsonl_prompt_strings_prompt_chats_and_messages_give_their_user_texts(tmp_path):
    path = _jsonl(
        tmp_path / "eval.jsonl",
        [
            {"prompt": "Plain prompt"},
            {"prompt": [{"role": "user", "content": "Chat prompt"}]},
            {
                "messages": [
                    {"role": "system", "content": "You are helpful."},
                    {"role": "user", "content": "First question"},
                    {"role": "assistant", "content": "An answer"},
                    {"role": "user", "content": "Second question"},
                ]
            },
            {"prompt": "Both fields: prompt wins", "messages": [{"role": "user", "content": "x"}]},
            {"id": 5},  # no prompt: skipped
        ],
    )
    frame = read_eval_set(path, "evals/eval.jsonl")
    assert frame.get_column("prompt").to_list() == [
        "Plain prompt",
        "Chat prompt",
        "First question",
        "Second question",
        "Both fields: prompt wins",
    ]
    assert set(frame.get_column("eval_set").to_list()) == {"evals/eval.jsonl"}


def test_a_parquet_eval_set_with_a_messages_column_is_read(tmp_path):
    path = tmp_path / "eval.parquet"
    pl.DataFrame(
        {
            "messages": [
                [
                    {"role": "user", "content": "Parquet question"},
                    {"role": "assistant", "content": "a"},
                ]
            ]
        }
    ).write_parquet(path)
    assert read_eval_set(path, "eval.parquet").get_column("prompt").to_list() == [
        "Parquet question"
    ]


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("missing.jsonl", None, "cannot read"),
        ("bad.jsonl", b'{"prompt": "ok"}\n{not json\n', "line 2 is not JSON"),
        ("list.jsonl", b'["prompt"]\n', "line 1 is not a JSON object"),
        ("empty.jsonl", b'{"question": "no prompt field"}\n', "no record with a `prompt`"),
        ("broken.parquet", b"not parquet at all", "not a readable Parquet file"),
    ],
)
def test_an_unreadable_eval_set_is_a_settings_error_naming_the_file(
    tmp_path, name, content, problem
):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(EvalSetError) as caught:
        read_eval_set(path, name)
    assert isinstance(caught.value, SettingsError)  # the CLI's exit 2
    assert str(path) in str(caught.value) and problem in str(caught.value)


def test_eval_paths_are_relative_to_the_config_file_and_recorded_with_their_sha256(tmp_path):
    (tmp_path / "evals").mkdir()
    body = b'{"prompt": "What is the capital of France?"}\n'
    (tmp_path / "evals" / "e.jsonl").write_bytes(body)
    settings = Settings(
        config_path=tmp_path / "turnlake.toml", release_decontaminate=("evals/e.jsonl",)
    )
    sets = eval_sets(settings)
    assert sets is not None
    assert sets.record()["sets"] == [
        {"file": "evals/e.jsonl", "sha256": hashlib.sha256(body).hexdigest()}
    ]
    assert sets.record()["params"]["ngram_size"] == 8


def test_an_edited_eval_set_is_a_change_the_no_change_build_sees(tmp_path):
    from pipelines.orchestration.build_record import input_parts

    path = tmp_path / "e.jsonl"
    path.write_bytes(b'{"prompt": "one"}\n')
    settings = Settings(config_path=tmp_path / "turnlake.toml", release_decontaminate=("e.jsonl",))
    parts = lambda s: input_parts(s, _NoRaw(), {})
    before = parts(settings)["evaluation sets"]
    path.write_bytes(b'{"prompt": "two"}\n')
    assert parts(settings)["evaluation sets"] != before
    assert "evaluation sets" not in parts(Settings())


class _NoRaw:
    digest = "raw"


def test_no_eval_sets_add_nothing_to_the_config_or_the_proof():
    assert eval_sets(Settings()) is None
    written = settings_from_model(Path("r"), Path("d"), None, validate_config({"release": {}}))
    empty = validate_config({"release": {"decontaminate": []}})
    assert settings_from_model(Path("r"), Path("d"), None, empty) == written
    assert proof_part(None, {}) == {}
    assert config_part({"dropped_duplicate_prompts": {}}) == {}


# -------------------------------------------------------------- a tiny release's keep rule

MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))


def _chat(user: str) -> list[dict]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": "Sure."}]


def _sft() -> pl.DataFrame:
    # rows 0-4 the planted prompt and its paraphrases in train / validation, row 5 the planted
    # prompt in test, rows 6-8 unrelated
    users = [PLANTED, *PARAPHRASES, PLANTED, *UNRELATED]
    splits = ["train", "train", "validation", "train", "validation", "test"] + ["train"] * 3
    return pl.DataFrame(
        {
            "split": splits,
            # the test row shares row 0's prompt hash, as if the duplicate-prompt rule had kept it
            "prompt_hash": [f"h{i}" if i != 5 else "h0" for i in range(len(users))],
            "messages": [_chat(u) for u in users],
        },
        schema={"split": pl.String, "prompt_hash": pl.String, "messages": MESSAGES},
    )


def _keys(frame: pl.DataFrame, dataset: str) -> pl.DataFrame:
    return frame.select(
        dataset=pl.lit(dataset),
        row=pl.int_range(pl.len(), dtype=pl.UInt32),
        prompt_hash="prompt_hash",
        split="split",
        keep=pl.lit(True),
        **{PARTITION: pl.lit("b00000-s00")},
    )


def test_a_tiny_release_loses_the_planted_rows_from_train_and_validation_only(tmp_path):
    sft = _sft()
    stepwise = pl.DataFrame(
        {"split": ["train", "train"], "prompt_hash": ["s0", "s1"], "prompt": [PLANTED, "Hello"]}
    )
    keys = pl.concat([_keys(sft, "sft"), _keys(stepwise, "stepwise")])
    texts = pl.concat([user_texts(sft, "sft"), user_texts(stepwise, "stepwise")])
    prompts = pl.DataFrame({"eval_set": ["evals/poems.jsonl"], "prompt": [PLANTED]})
    sets = EvalSets(prompts, [{"file": "evals/poems.jsonl", "sha256": "x"}], Decontamination())
    out, left = drop_matched(keys, matched(texts, sets), sets)
    kept = out.filter(pl.col("keep")).select("dataset", "row").rows()
    assert kept == [("sft", 5), ("sft", 6), ("sft", 7), ("sft", 8), ("stepwise", 1)]
    assert left == {"evals/poems.jsonl": {"sft": 5, "stepwise": 1}}


def test_a_row_already_dropped_is_not_counted_again():
    sft = _sft()
    keys = _keys(sft, "sft").with_columns(keep=pl.col("row") != 0)
    prompts = pl.DataFrame({"eval_set": ["e"], "prompt": [PLANTED]})
    sets = EvalSets(prompts, [{"file": "e", "sha256": "x"}], Decontamination())
    out, left = drop_matched(keys, matched(user_texts(sft, "sft"), sets), sets)
    assert left == {"e": {"sft": 4}}
    assert out.filter(pl.col("keep")).get_column("row").to_list() == [5, 6, 7, 8]


def test_test_rows_give_no_user_text_to_match():
    frame = pl.DataFrame(
        {
            "split": ["train", "validation", "test"],
            "prompt_hash": ["a", "b", "c"],
            "messages": [_chat("one"), _chat("two"), _chat("three")],
        },
        schema={"split": pl.String, "prompt_hash": pl.String, "messages": MESSAGES},
    )
    assert sorted(user_texts(frame, "sft").rows()) == [("a", "one"), ("b", "two")]


def test_only_user_messages_are_training_user_text():
    frame = pl.DataFrame(
        {
            "split": ["train"],
            "prompt_hash": ["h"],
            "messages": [
                [
                    {"role": "system", "content": PLANTED},
                    {"role": "user", "content": "Hello"},
                    {"role": "assistant", "content": PLANTED},
                ]
            ],
        },
        schema={"split": pl.String, "prompt_hash": pl.String, "messages": MESSAGES},
    )
    assert user_texts(frame, "sft").rows() == [("h", "Hello")]
