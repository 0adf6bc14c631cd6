"""The demo release's OpenAI fine-tuning files (pipelines/release/store/openai_files.py), read as
a user would: every line valid by the format rules written from OpenAI's guides
(tests/unit/test_openai_formats.py), non-empty train files, lines and rows left out adding up to
the dataset's rows, loadable with `datasets` and `turnlake.load_release`."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.api.loading import load_release
from pipelines.release.store.files import MANIFEST, latest_release
from tests.unit.test_openai_formats import chat_problems, preference_problems

RULES = {"openai_sft": chat_problems, "openai_preference": preference_problems}


@pytest.fixture(scope="module")
def demo_release(demo_warehouse) -> Path:
    exports = Path(demo_warehouse) / "exports"
    return exports / latest_release(exports)


@pytest.mark.parametrize("config", sorted(RULES))
def test_every_line_meets_openais_documented_rules_and_train_is_not_empty(demo_release, config):
    lines = (demo_release / config / "train.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines
    for split_file in sorted((demo_release / config).glob("*.jsonl")):
        for number, line in enumerate(split_file.read_text(encoding="utf-8").splitlines(), 1):
            assert RULES[config](line) == [], f"{split_file.name} line {number}"


@pytest.mark.parametrize(
    ("config", "dataset"), [("openai_sft", "sft"), ("openai_preference", "preference")]
)
def test_lines_and_rows_left_out_are_the_datasets_rows_per_split(demo_release, config, dataset):
    manifest = orjson.loads((demo_release / MANIFEST).read_bytes())
    entry = manifest["openai"][config]
    lines = {
        p.stem: len(p.read_bytes().splitlines()) for p in (demo_release / config).glob("*.jsonl")
    }
    assert lines == entry["counts"]
    rows = pl.read_parquet(demo_release / dataset / "*.parquet", columns=["split"])
    assert sum(lines.values()) + sum(entry["left_out"].values()) == rows.height
    assert set(lines) == set(rows.get_column("split"))
    listed = {f["path"]: f["rows"] for f in manifest["files"] if f["path"].startswith(f"{config}/")}
    assert listed == {f"{config}/{split}.jsonl": n for split, n in lines.items()} | {
        f"{config}/README.md": None
    }
    assert manifest["config"]["formats"]["openai"] == 1  # the converter's version


def test_datasets_loads_each_openai_folder_and_load_release_each_config(
    demo_release, demo_warehouse, tmp_path
):
    datasets = pytest.importorskip("datasets")
    manifest = orjson.loads((demo_release / MANIFEST).read_bytes())
    for config in RULES:
        counts = manifest["openai"][config]["counts"]
        loaded = datasets.load_dataset(str(demo_release / config), cache_dir=str(tmp_path))
        assert {s: d.num_rows for s, d in loaded.items()} == {s: n for s, n in counts.items() if n}
        api = load_release(config=config, data_root=demo_warehouse, cache_dir=tmp_path)
        assert {s: d.num_rows for s, d in api.items()} == counts
    sft = datasets.load_dataset(str(demo_release / "openai_sft"), cache_dir=str(tmp_path))
    first = (demo_release / "openai_sft" / "train.jsonl").read_bytes().splitlines()[0]
    messages = orjson.loads(first)["messages"]
    # a message without a weight reads as weight None, as `datasets` reads missing struct fields
    assert sft["train"][0]["messages"] == [m | {"weight": m.get("weight")} for m in messages]
    preference = datasets.load_dataset(
        str(demo_release / "openai_preference"), cache_dir=str(tmp_path)
    )
    assert set(preference["train"].features) == {
        "input",
        "preferred_output",
        "non_preferred_output",
    }


def test_the_release_card_describes_the_openai_files(demo_release):
    card = (demo_release / "README.md").read_text(encoding="utf-8")
    section = card.split("## OpenAI fine-tuning files", 1)[1].split("\n## ", 1)[0]
    assert "| `openai_sft` | `sft` | train " in section
    assert "| `openai_preference` | `preference` | train " in section
    assert 'load_dataset("<release>/openai_sft")' in section
