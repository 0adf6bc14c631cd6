"""Pending partitions are privatized in batches that close at CHUNK_BYTES of rows as built, and a
partition privatized in a batch gets exactly the rows and replacements per row it gets alone."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.exports.datasets import DATASETS
from pipelines.privacy.known_names import NAMES_SCHEMA
from pipelines.privacy.redact import RedactionConfig
from pipelines.release.privatize import partitions as privatize_partitions
from pipelines.release.privatize.known_names import KNOWN_NAMES
from pipelines.release.privatize.partitions import Pending, Privacy, privatize_all

ROWS = pl.DataFrame({"text": ["x" * 100] * 10})  # 1 000 bytes of string data and offsets
KEY = b"k" * 32
PID = "5ed9dc4f-6630-4cc5-8619-10584891a2ab"  # a subject id
MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
PRIVACY = Privacy(KEY, "", RedactionConfig(), "", 1)


def _batch_sizes(partitions: int, monkeypatch) -> list[int]:
    pending = [Pending(f"p{i}", ("b", "p")) for i in range(partitions)]
    held = {p.key: {"sft": ROWS} for p in pending}
    built = lambda root, p, held: (held[p.key], pl.DataFrame(schema=NAMES_SCHEMA))
    monkeypatch.setattr(privatize_partitions, "_built_rows", built)
    return [len(batch) for batch in privatize_partitions._batches(None, pending, held)]


def test_batches_close_at_the_bytes_held(monkeypatch) -> None:
    monkeypatch.setattr(privatize_partitions, "CHUNK_BYTES", 2 * ROWS.estimated_size() + 1)
    assert _batch_sizes(7, monkeypatch) == [3, 3, 1]  # 3 partitions pass the budget: 3 + 3 + 1


def _sft(episodes: list[str], texts: list[str]) -> pl.DataFrame:
    messages = [[{"role": "user", "content": text}] for text in texts]
    return pl.DataFrame(
        {"episode_id": episodes, "messages": messages, "prompt_hash": texts},
        schema={"episode_id": pl.String, "messages": MESSAGES, "prompt_hash": pl.String},
    )


def _unit(sft: pl.DataFrame, names: list[tuple[str, str]]) -> dict[str, pl.DataFrame]:
    kto = pl.DataFrame({"episode_id": ["e"], "prompt": ["plain words"]})
    return {
        **{
            name: pl.DataFrame({"episode_id": []}, schema={"episode_id": pl.String})
            for name in DATASETS
        },
        "sft": sft,
        "kto": kto.head(0) if sft.height == 0 else kto,
        KNOWN_NAMES: pl.DataFrame(names, schema=NAMES_SCHEMA, orient="row"),
    }


UNITS = {
    # an e-mail in row 1, Quorin known in episode a1 (the same text in a2, which does not know him)
    "a": _unit(
        _sft(["a1", "a1", "a2"], ["Quorin again", "mail x@example.com", "Quorin again"]),
        [("a1", "Quorin")],
    ),
    # the subject id in row 0, the e-mail twice in row 1, Zelvie known in b1
    "b": _unit(
        _sft(["b1", "b1"], [f"I am {PID}", "x@example.com or x@example.com, Zelvie"]),
        [("b1", "Zelvie")],
    ),
    # nothing to clean, and datasets of another schema (no rows)
    "c": _unit(pl.DataFrame({"episode_id": []}, schema={"episode_id": pl.String}), []),
    "d": _unit(_sft(["d1"], ["Quorin, call +1 (555) 123-4567"]), []),
}


def _privatized(batched: bool, monkeypatch) -> dict[str, tuple[pl.DataFrame, dict]]:
    if not batched:
        monkeypatch.setattr(privatize_partitions, "CHUNK_BYTES", 1)  # a batch per partition
    pending = [Pending(key, ("b", "p")) for key in UNITS]
    held = {key: dict(frames) for key, frames in UNITS.items()}
    out = privatize_all(None, pending, [PID], PRIVACY, held)
    return {key: (ledger, datasets) for key, ledger, datasets in out}


def test_a_partition_privatized_in_a_batch_is_what_it_is_alone(monkeypatch) -> None:
    batched = _privatized(True, monkeypatch)
    alone = _privatized(False, monkeypatch)
    assert list(batched) == list(UNITS)
    for key, (ledger, datasets) in batched.items():
        assert_frame_equal(ledger, alone[key][0])
        assert list(datasets) == list(alone[key][1])
        for name, frame in datasets.items():
            assert_frame_equal(frame, alone[key][1][name])


def test_a_batch_counts_each_partitions_rows_from_its_first(monkeypatch) -> None:
    batched = _privatized(True, monkeypatch)
    sft = lambda key: batched[key][0].filter(pl.col("dataset") == "sft").drop("dataset")
    # by hand: a's Quorin in a1 only (row 0), its e-mail in row 1; b's id in row 0, e-mail twice and
    # Zelvie in row 1; d's phone (Quorin unknown in d1); c has no row
    assert sft("a").select("row", "email", "known_name").rows() == [(0, 0, 1), (1, 1, 0), (2, 0, 0)]
    assert sft("b").select("row", "email", "known_name", "pseudonym").rows() == [
        (0, 0, 0, 1),
        (1, 2, 1, 0),
    ]
    assert sft("d").select("row", "phone").rows() == [(0, 1)]
    assert sft("c").height == 0
    texts = batched["a"][1]["sft"].get_column("messages").list.eval(pl.element().struct["content"])
    assert texts.to_list() == [["[PERSON] again"], ["mail [EMAIL]"], ["Quorin again"]]


@pytest.mark.parametrize("unit", ["a", "b", "d"])
def test_a_batch_keeps_each_partitions_rows_in_order(monkeypatch, unit) -> None:
    frame = _privatized(True, monkeypatch)[unit][1]["sft"]
    assert frame.get_column("episode_id").to_list() == UNITS[unit]["sft"]["episode_id"].to_list()


def test_a_batch_holds_its_rows_as_built_only_through_its_stacks(monkeypatch) -> None:
    batches, held_when_cleaned = [], []
    made_batches, cleaned_frame = privatize_partitions._batches, privatize_partitions.cleaned_frame

    def watched_batches(*args):
        for batch in made_batches(*args):
            batches.append(batch)
            yield batch

    def watched_cleaning(*args):
        held_when_cleaned.append(sum(len(batch) for batch in batches))
        return cleaned_frame(*args)

    monkeypatch.setattr(privatize_partitions, "_batches", watched_batches)
    monkeypatch.setattr(privatize_partitions, "cleaned_frame", watched_cleaning)
    _privatized(True, monkeypatch)
    # by hand: one batch of the 4 units; its list of (unit, rows, names) emptied before cleaning,
    # so that a dataset's rows go once it is privatized
    assert len(batches) == 1 and held_when_cleaned == [0]
