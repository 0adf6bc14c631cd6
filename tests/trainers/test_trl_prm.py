"""TRL's process-reward-model preprocessing accepts the release's `stepwise` config: the demo
build's train split, loaded with `datasets.load_dataset("parquet", ...)` as README.md shows, goes
through `PRMTrainer.tokenize_row` the way `PRMTrainer` maps its train dataset, on a byte-level
tokenizer built here (one token per byte, so the label positions are worked out from the texts'
byte lengths), and every step's label lands on the separator token that ends that step.

TRL dropped `PRMTrainer` (and the stepwise-supervision dataset type) after 1.13
(huggingface/trl#7133); the `trainers` group locks a later TRL, so this test runs only where
`trl.experimental.prm` is importable (`trl<=1.13`) and is skipped otherwise, saying so."""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.trainers.chat import CHATML_TEMPLATE, data_files, latest_release, local_tokenizer

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # the import of trl.experimental warns
NOT_INSTALLED = [name for name in ("torch", "trl") if importlib.util.find_spec(name) is None]


def _prm_trainer_missing() -> str:
    if NOT_INSTALLED:
        return f"not installed: {', '.join(NOT_INSTALLED)} (`.ci/install-trainers`)"
    if importlib.util.find_spec("trl.experimental.prm") is None:
        return (
            "this TRL has no PRMTrainer (removed after trl 1.13, huggingface/trl#7133); "
            "run with trl<=1.13 on the path to check the stepwise config against it"
        )
    return ""


SKIP_REASON = _prm_trainer_missing()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON)]

SEPARATOR = "\n"  # PRMConfig's default step_separator


@pytest.fixture(scope="module")
def train_split(demo_warehouse, tmp_path_factory):
    from datasets import load_dataset

    files = data_files(latest_release(demo_warehouse), "stepwise")
    assert "train" in files, "the release has no stepwise train split"
    cache = tmp_path_factory.mktemp("hf-cache")
    return load_dataset("parquet", data_files=files, cache_dir=str(cache))["train"]


def test_prm_trainer_tokenisation_puts_each_steps_label_on_the_end_of_that_step(train_split):
    from datasets import features
    from trl.experimental.prm import PRMTrainer

    tokenizer = local_tokenizer(CHATML_TEMPLATE)
    fn_kwargs = {
        "tokenizer": tokenizer,
        "step_separator": SEPARATOR,
        "max_length": None,
        "max_completion_length": None,
        "train_on_last_step_only": False,
        "is_eval": False,
    }
    # as PRMTrainer maps its train dataset (labels as int64, or map casts them to bool)
    tokenized = train_split.map(
        PRMTrainer.tokenize_row,
        fn_kwargs=fn_kwargs,
        remove_columns=train_split.features,
        features=features.Features(
            {
                "labels": features.Sequence(features.Value("int64")),
                "input_ids": features.Sequence(features.Value("int64")),
            }
        ),
    )
    assert tokenized.num_rows == train_split.num_rows > 0
    seen = set()
    for row, out in zip(train_split, tokenized, strict=True):
        # bos, the prompt's bytes, then each step's bytes and one separator byte
        end = 1 + len(row["prompt"].encode())
        ends = []
        for completion in row["completions"]:
            end += len(completion.encode()) + len(SEPARATOR.encode())
            ends.append(end - 1)
        labelled = [i for i, label in enumerate(out["labels"]) if label != -100]
        assert labelled == ends, row["episode_id"]
        assert [out["labels"][i] for i in ends] == [int(label) for label in row["labels"]]
        assert {tokenizer.decode([out["input_ids"][i]]) for i in ends} == {SEPARATOR}
        text = row["prompt"] + "".join(c + SEPARATOR for c in row["completions"])
        assert tokenizer.decode(out["input_ids"][1:]) == text
        seen.update(row["labels"])
    assert seen == {True, False}
