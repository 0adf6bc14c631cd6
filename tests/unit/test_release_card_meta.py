"""The card's Hugging Face metadata and warnings, on tiny frames with values worked out by hand."""

from datetime import UTC, datetime

import polars as pl
import pytest

from pipelines.release.card.columns import column_description
from pipelines.release.card.meta import Config, card_warnings, hf_features, size_category

SOURCES_BY_HAND = ("scenario", "study", "social_rl", "dialogue", "decision", "oasst", "hh_rlhf")


def _config(name: str, frame: pl.DataFrame, dataset: str | None = None) -> Config:
    splits = tuple(dict.fromkeys(frame["split"]))
    return Config(name, name, dataset or name, frame, splits)


def test_features_are_what_datasets_infers_from_the_parquet_schema():
    datasets = pytest.importorskip("datasets")
    frame = pl.DataFrame(
        {
            "split": ["train"],
            "step": [1],
            "reward": [0.5],
            "label": [True],
            "ts": [datetime(2026, 1, 1, tzinfo=UTC)],
            "messages": [[{"role": "user", "content": "hi"}]],
            "feedback_ids": [["f1"]],
            "meta": [{"a": 1, "b": "x"}],
        }
    )
    schema = frame.head(0).to_arrow().schema
    expected = datasets.Features.from_arrow_schema(schema)._to_yaml_list()
    assert hf_features(schema) == expected


@pytest.mark.parametrize(
    ("rows", "label"),
    [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (99_999, "10K<n<100K"), (10**6, "1M<n<10M")],
)
def test_size_category_follows_the_hub_buckets(rows, label):
    assert size_category(rows) == label


def test_warns_about_tiny_and_empty_splits_with_their_groups():
    frame = pl.DataFrame({"split": ["train"] * 3 + ["test"], "group_id": ["a", "a", "b", "c"]})
    found = card_warnings(
        [_config("sft", frame)],
        {"tiny_split_rows": 3},
        {"train": 0.7, "test": 0.2, "validation": 0.1},
    )
    assert found == [
        "`sft` `test` is tiny: 1 rows from 1 group(s) (under 3); scores on it are noise.",
        (
            "`sft` has no `validation` rows: its `validation` file is empty (not in the card's "
            "`configs`: `datasets` cannot load a split of 0 rows)."
        ),
    ]


def test_warns_when_most_preference_pairs_have_no_reward_margin():
    frame = pl.DataFrame(
        {
            "split": ["train"] * 4,
            "group_id": ["a", "b", "c", "d"],
            "reward_chosen": [0.5, None, None, None],
            "reward_rejected": [0.1, 0.2, None, None],
        }
    )
    card = {"tiny_split_rows": 0, "missing_margin_share": 0.5}
    found = card_warnings([_config("preference", frame)], card, {"train": 1.0})
    assert len(found) == 1 and found[0].startswith(
        "`preference`: 3 of 4 preference pairs carry no reward margin"
    )
    card["missing_margin_share"] = 0.75  # 3 of 4 is not over 75 %
    assert card_warnings([_config("preference", frame)], card, {"train": 1.0}) == []


def test_warns_about_skewed_labels_per_split():
    frame = pl.DataFrame(
        {
            "split": ["train"] * 10 + ["test"] * 2,
            "group_id": [str(i) for i in range(12)],
            "label": [True] * 10 + [True, False],
        }
    )
    card = {"tiny_split_rows": 0, "label_skew": 0.9}
    found = card_warnings([_config("kto", frame)], card, {"train": 0.8, "test": 0.2})
    assert found == ["`kto` `train` labels are skewed: 10 true, 0 false (majority over 90%)."]


def test_source_column_names_all_seven_sources():
    text = column_description("sft", "source")
    assert all(f"`{source}`" in text for source in SOURCES_BY_HAND)


def test_warns_when_whole_groups_move_a_config_off_its_split_ratios():
    # 10 rows: one group of 9 in train, 1 row in test → test 10 % (configured 20 %, off by 10
    # points = half the ratio: not over it); 19 + 1 rows → test 5 %, off by 15 > 10: warned.
    near = pl.DataFrame({"split": ["train"] * 9 + ["test"], "group_id": ["g"] * 9 + ["h"]})
    far = pl.DataFrame({"split": ["train"] * 19 + ["test"], "group_id": ["g"] * 19 + ["h"]})
    card = {"tiny_split_rows": 1}
    ratios = {"train": 0.8, "test": 0.2}
    assert card_warnings([_config("kto", near)], card, ratios) == []
    found = card_warnings([_config("kto", far)], card, ratios)
    assert len(found) == 1
    assert found[0].startswith(
        "`kto` splits are off their ratios: test 5.0% (configured 20%) of 20 rows."
    )
