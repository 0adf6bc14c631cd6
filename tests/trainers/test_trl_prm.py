"""TRL's process-reward-model preprocessing accepts the release's `stepwise` config: the demo
build's train split, loaded with `datasets.load_dataset("parquet", ...)` as README.md shows, goes
through `PRMTrainer.tokenize_row` the way `PRMTrainer` maps its train dataset, on a byte-level
tokenizer built here (one token per byte, so the label positions are worked out from the texts'
byte lengths), and every step's label lands on the separator token that ends that step.

TRL dropped `PRMTrainer` (and the stepwise-supervision dataset type) after 1.13
(huggingface/trl#7133), and the `trainers` group locks a later TRL: `.ci/install-trainers` puts
trl 1.13 in a folder of its own (`.venv/trl-prm`), and the tokenisation runs in a process with that
folder first on its path (one process cannot import two TRLs)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trainers.chat import CHATML_TEMPLATE, data_files, latest_release, local_tokenizer

ROOT = Path(__file__).resolve().parents[2]
PRM_TRL = ROOT / ".venv" / "trl-prm"  # where .ci/install-trainers puts trl 1.13
NOT_INSTALLED = [name for name in ("torch", "trl") if importlib.util.find_spec(name) is None]


def _prm_trainer_missing() -> str:
    if NOT_INSTALLED:
        return f"not installed: {', '.join(NOT_INSTALLED)} (`.ci/install-trainers`)"
    if not (PRM_TRL / "trl" / "experimental" / "prm").is_dir():
        return (
            f"no TRL with PRMTrainer at {PRM_TRL} (removed after trl 1.13, huggingface/trl#7133; "
            "`.ci/install-trainers` puts trl 1.13 there)"
        )
    return ""


SKIP_REASON = _prm_trainer_missing()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON)]

SEPARATOR = "\n"  # PRMConfig's default step_separator

# Maps the train split through PRMTrainer.tokenize_row as PRMTrainer maps its train dataset
# (labels as int64, or map casts them to bool); prints TRL's version, then one JSON line a row.
TOKENIZE = """
import json, sys
from datasets import features, load_dataset
import trl
from trl.experimental.prm import PRMTrainer
from tests.trainers.chat import CHATML_TEMPLATE, local_tokenizer

files, cache, separator = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
train = load_dataset("parquet", data_files=files, cache_dir=cache)["train"]
tokenized = train.map(
    PRMTrainer.tokenize_row,
    fn_kwargs={
        "tokenizer": local_tokenizer(CHATML_TEMPLATE),
        "step_separator": separator,
        "max_length": None,
        "max_completion_length": None,
        "train_on_last_step_only": False,
        "is_eval": False,
    },
    remove_columns=train.features,
    features=features.Features(
        {
            "labels": features.Sequence(features.Value("int64")),
            "input_ids": features.Sequence(features.Value("int64")),
        }
    ),
)
print(json.dumps({"trl": trl.__version__}))
for row in tokenized:
    print(json.dumps({"labels": row["labels"], "input_ids": row["input_ids"]}))
"""


@pytest.fixture(scope="module")
def train_split(demo_warehouse, tmp_path_factory):
    from datasets import load_dataset

    files = data_files(latest_release(demo_warehouse), "stepwise")
    assert "train" in files, "the release has no stepwise train split"
    cache = tmp_path_factory.mktemp("hf-cache")
    return files, cache, load_dataset("parquet", data_files=files, cache_dir=str(cache))["train"]


def _tokenized_by_trl_1_13(files: dict, cache: Path) -> list[dict]:
    path = os.pathsep.join([str(PRM_TRL), str(ROOT), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", TOKENIZE, json.dumps(files), str(cache), SEPARATOR],
        env={**os.environ, "PYTHONPATH": path, "TRL_EXPERIMENTAL_SILENCE": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    header, *rows = (json.loads(line) for line in done.stdout.splitlines())
    assert header["trl"] == "1.13.0"  # the TRL that has PRMTrainer, not the locked one
    return rows


def test_prm_trainer_tokenisation_puts_each_steps_label_on_the_end_of_that_step(train_split):
    files, cache, train = train_split
    tokenizer = local_tokenizer(CHATML_TEMPLATE)
    tokenized = _tokenized_by_trl_1_13(files, cache)
    assert len(tokenized) == train.num_rows > 0
    seen = set()
    for row, out in zip(train, tokenized, strict=True):
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
