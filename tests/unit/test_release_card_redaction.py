"""The dataset card counts what redaction replaced, per kind, over all datasets."""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl

from pipelines.release.build.request import ReleaseRequest
from pipelines.release.card.render import render_card
from tests.unit._staged import staged


def card(privacy: dict, ledger: dict | None) -> str:
    frame = pl.DataFrame({"split": ["train"], "label": [True]})
    with tempfile.TemporaryDirectory() as folder:
        request = ReleaseRequest(
            staged({"kto": frame}, Path(folder)),
            {},
            {"privacy": privacy},
            [],
            "0",
            "a",
            redaction_ledger=ledger,
        )
        return render_card(
            "20261129-0000000000",
            request,
            {"kto": [{"split": "train", "file": "train-b00000-p000.parquet", "rows": 1}]},
        )


def test_card_counts_replacements_per_kind_over_all_datasets() -> None:
    privacy = {
        "pseudonymized": True,
        "redacted": True,
        "redaction": {"kinds": ["card", "email", "person"]},
    }
    ledger = {
        "sft": {"pseudonym": 4, "email": 2, "person": 1},
        "kto": {"pseudonym": 3, "person": 2},
    }
    text = card(privacy, ledger)
    # by hand: email 2 + 0, person 1 + 2, card never found; ids 4 + 3
    assert (
        "Replaced in all datasets, by kind: `card` 0, `email` 2, `person` 3; subject ids "
        "pseudonymized: 7." in text
    )


def test_an_unredacted_release_has_no_counts() -> None:
    text = card({"pseudonymized": False, "redacted": False}, None)
    assert "Replaced in all datasets" not in text
    assert "NOT pseudonymised or redacted" in text
