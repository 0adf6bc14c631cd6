"""`privatize` in Polars gives exactly what the value-by-value Python walk gave: same frames (nulls,
dtypes, nesting), same ledger counts (a repeated value counts every time), and only candidates
reach Python."""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import pipelines.release.privatize.privatize as privatize_module
from pipelines.privacy.known_names import NAMES_SCHEMA
from pipelines.privacy.pseudonyms import IdReplacer, Pseudonymizer
from pipelines.privacy.redact import Redactor, redaction_config_from
from pipelines.release.privatize.privatize import (
    Prepared,
    changes_by_column,
    cleaned_frame,
    finish,
    id_replacer,
    prepare,
    privatize,
)
from pipelines.release.privatize.row_ledger import row_leaves

KEY = b"k" * 32
PID = "5ed9dc4f-6630-4cc5-8619-10584891a2ab"
MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
Q_VALUES = pl.List(pl.Struct({"action": pl.String, "value": pl.Float64}))


def _datasets() -> dict[str, pl.DataFrame]:
    texts = [
        f"I am {PID}, call me at +1 (555) 123-4567",
        "Revenue was $1,200 last year.",
        "plain words",
        None,
        "",
    ]
    sft = pl.DataFrame(
        {
            "split": ["train", "train", "test", "test"],
            "prompt_hash": ["h1", "h1", None, "h2"],
            "episode_id": [
                f"study:{PID}_ana_1767943131",
                f"study:{PID}_ana_1767943131",
                "dialogue:c-1",
                None,
            ],
            "turn_index": [0, 1, 2, 3],
            "messages": [
                [{"role": "user", "content": texts[0]}, {"role": "assistant", "content": texts[1]}],
                [{"role": "user", "content": texts[0]}, None, {"role": None, "content": texts[3]}],
                [],
                None,
            ],
            "feedback_ids": [["f-1", f"{PID}#2"], None, [None, "mail x@example.com"], []],
            "q_values": [
                [{"action": "wait 10.0.0.1", "value": 0.5}],
                None,
                [{"action": None, "value": None}],
                [],
            ],
            "meta": [
                {"note": texts[2], "n": 1},
                None,
                {"note": None, "n": None},
                {"note": texts[4], "n": 2},
            ],
        },
        schema_overrides={
            "messages": MESSAGES,
            "q_values": Q_VALUES,
            "meta": pl.Struct({"note": pl.String, "n": pl.Int64}),
        },
    )
    numbers = pl.DataFrame({"split": ["train"], "prompt_hash": ["h1"], "reward": [1.0]})
    empty = sft.clear()
    return {"sft": sft, "numbers": numbers, "empty": empty}


def _walk(value, fn):
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_walk(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, fn) for k, v in value.items()}
    return value


def _reference(
    datasets: dict[str, pl.DataFrame],
) -> tuple[dict[str, pl.DataFrame], dict[str, dict[str, int]]]:
    """The former implementation: every value of every textual column through Python."""
    pseudonyms = Pseudonymizer(KEY)
    replacer = IdReplacer({PID: pseudonyms.pseudonym("person", PID)})
    redactor = Redactor()
    out, ledger = {}, {}
    for name, frame in datasets.items():
        counts: Counter[str] = Counter()

        def clean(text: str, counts=counts) -> str:
            replaced, n = replacer.replace_counted(text)
            redacted, kinds = redactor.redact(replaced)
            counts["pseudonym"] += n
            counts.update(kinds)
            return redacted

        columns = []
        for column, dtype in frame.schema.items():
            values = frame[column].to_list()
            if column == "prompt_hash":
                hashed = [
                    None if v is None else hmac.new(KEY, v.encode(), hashlib.sha256).hexdigest()
                    for v in values
                ]
                columns.append(pl.Series(column, hashed, dtype=dtype))
            elif privatize_module.is_textual(dtype):
                columns.append(pl.Series(column, [_walk(v, clean) for v in values], dtype=dtype))
            else:
                columns.append(frame[column])
        out[name] = pl.DataFrame(columns)
        ledger[name] = dict(sorted(counts.items()))
    return out, ledger


@pytest.fixture
def with_subjects(monkeypatch):
    monkeypatch.setattr(privatize_module, "subject_ids", lambda silver: [PID])


def test_privatize_equals_the_value_by_value_walk(with_subjects) -> None:
    datasets = _datasets()
    result = privatize(datasets, {}, KEY, {})
    expected, ledger = _reference(datasets)
    assert result.ledger == ledger
    for name, frame in expected.items():
        assert_frame_equal(result.datasets[name], frame)
    assert (
        ledger["sft"]["pseudonym"] == 5
        and ledger["sft"]["phone"] == 2
        and ledger["sft"]["money"] == 1
    )


def test_only_candidate_texts_reach_python(with_subjects, redactor_calls) -> None:
    seen = redactor_calls.texts
    privatize(_datasets(), {}, KEY, {})
    assert "plain words" not in seen and "f-1" not in seen and "" not in seen
    assert len(seen) == len(set(seen))  # each distinct text once, however often it occurs


def test_partitions_cleaned_together_equal_each_privatized_alone() -> None:
    """The release cleans several partitions' candidate texts in one call (release/build/parts.py):
    each partition's frames and ledger are what privatizing it alone gives; its ledger counts only
    its own texts (by hand: the e-mail twice in the first, the phone once in the second)."""
    config = redaction_config_from({})
    first = {"kto": pl.DataFrame({"text": ["mail x@example.com", "mail x@example.com", "ok"]})}
    second = {"kto": pl.DataFrame({"text": [f"{PID}: call +1 (555) 123-4567", "ok"]})}
    ids = [PID]
    prepared = [prepare(first, ids, config), prepare(second, ids, config)]
    candidates = [c for p in prepared for c in p.candidates]
    cleaned = cleaned_frame(candidates, id_replacer(KEY, tuple(ids)), config, 1)
    together = [finish(p, KEY, cleaned) for p in prepared]
    assert together[0][1] == {"kto": {"email": 2, "pseudonym": 0}}
    assert together[1][1] == {"kto": {"phone": 1, "pseudonym": 1}}
    for (datasets, ledger), alone in zip(together, (first, second), strict=True):
        done = privatize(alone, {}, KEY, {}, ids=ids)
        assert ledger == done.ledger
        assert_frame_equal(datasets["kto"], done.datasets["kto"])


def test_privatize_leaves_the_callers_datasets_as_given() -> None:
    """`finish` takes each dataset out of what `prepare` holds as it goes: not out of the
    caller's dict."""
    datasets = {"kto": pl.DataFrame({"text": ["mail x@example.com"]}), "sft": pl.DataFrame()}
    done = privatize(datasets, {}, KEY, {}, ids=[])
    assert list(datasets) == ["kto", "sft"]
    assert datasets["kto"]["text"].to_list() == ["mail x@example.com"]
    assert done.datasets["kto"]["text"].to_list() == ["mail [EMAIL]"]


def test_texts_cleaned_a_slice_at_a_time_give_the_frame_and_ledger_by_hand(monkeypatch) -> None:
    """A partition's candidate texts are cleaned SLICE_TEXTS at a time (the largest partitions
    have hundreds of thousands): slices with different kinds of replacements, and a text twice
    among the candidates, still give one row per text and a count of 0 where a slice had none."""
    monkeypatch.setattr(privatize_module, "SLICE_TEXTS", 1)
    config = redaction_config_from({})
    datasets = {
        "kto": pl.DataFrame(
            {"text": ["mail x@example.com", "call +1 (555) 123-4567", "mail x@example.com"]}
        )
    }
    prepared = prepare(datasets, [], config)
    twice = prepared.candidates + prepared.candidates  # as from two partitions cleaned together
    cleaned = cleaned_frame(twice, id_replacer(KEY, ()), config, 1)
    assert sorted(cleaned.rows()) == [
        ("call +1 (555) 123-4567", "call [PHONE]", 0, 1),
        ("mail x@example.com", "mail [EMAIL]", 1, 0),
    ]
    assert cleaned.columns == ["value", "cleaned", "email", "phone"]
    datasets, ledger = finish(prepared, KEY, cleaned)
    assert ledger == {"kto": {"email": 2, "phone": 1, "pseudonym": 0}}
    assert datasets["kto"]["text"].to_list() == ["mail [EMAIL]", "call [PHONE]", "mail [EMAIL]"]


def test_each_column_is_given_only_the_changed_texts_among_its_own_leaves() -> None:
    frame = pl.DataFrame(
        {
            "a": ["x", "y", None],
            "b": [["y", "z"], [], ["x", "x"]],
            "split": ["train", "train", "test"],
        }
    )
    cleaned = pl.DataFrame(
        {
            "value": ["x", "y", "z", "w", "train"],
            "cleaned": ["X", "y", "Z", "W", "train"],
            "pseudonym": [1, 0, 1, 1, 0],
        }
    )
    leaves = row_leaves(frame, ["a", "b", "split"])
    # by hand: "y" and "train" are unchanged, "w" is in no column; "a" holds "x" in row 0, "b"
    # "z" in row 0 and "x" twice in row 2 (one per leaf); "split" holds nothing changed
    by_column = changes_by_column(leaves, cleaned)
    assert sorted(by_column) == [0, 1]
    assert sorted(by_column[0].rows()) == [(0, "x", "X")]
    assert sorted(by_column[1].rows()) == [(0, "z", "Z"), (2, "x", "X"), (2, "x", "X")]


def test_a_string_column_has_its_changed_rows_put_in_place_and_a_nested_one_its_texts() -> None:
    frame = pl.DataFrame({"a": ["x", "y", None, "x"], "b": [["x", "y"], None, ["x"], []]})
    cleaned = pl.DataFrame({"value": ["x", "y"], "cleaned": ["X", "y"], "pseudonym": [1, 0]})
    prepared = Prepared({"t": frame}, {"t": ["a", "b"]}, [], pl.DataFrame(schema=NAMES_SCHEMA))
    done = finish(prepared, KEY, cleaned)[0]["t"]
    # by hand: "x" becomes "X" wherever it is, "y", nulls and empty lists stay as they were
    assert done["a"].to_list() == ["X", "y", None, "X"]
    assert done["b"].to_list() == [["X", "y"], None, ["X"], []]
    assert done.schema == frame.schema
