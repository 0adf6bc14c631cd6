"""The OpenAI fine-tuning files on the cards: a section of the release's card, and a small card of
each config's own folder.

`datasets` picks one builder for a whole repository, from the files of its first config
(huggingface/datasets#6447), so the release's card cannot list JSONL configs beside its Parquet
ones: `load_dataset(<release>, "openai_sft")` would read the JSONL files as Parquet. Each OpenAI
folder is therefore a dataset of its own with its own card: `load_dataset("<release>/openai_sft")`.
That card lists the splits with lines (`datasets` cannot materialize a split of 0 rows, as
meta.loadable_splits says) and the features, and no split sizes, which a `forget` would make
stale (a stale size fails `datasets`' split check)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pipelines.release.card.columns import EXPORT_FIELDS, EXPORT_PURPOSE
from pipelines.release.card.meta import front_matter, hf_features
from pipelines.release.store.files import CARD

_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
# What `datasets` reads a line as (declared on the folder's card, so every release has the same
# features whatever its lines hold)
SCHEMAS = {
    "openai_sft": pa.schema(
        [
            (
                "messages",
                pa.list_(
                    pa.struct(
                        [("role", pa.string()), ("content", pa.string()), ("weight", pa.int64())]
                    )
                ),
            )
        ]
    ),
    "openai_preference": pa.schema(
        [
            ("input", pa.struct([("messages", pa.list_(_MESSAGE))])),
            ("preferred_output", pa.list_(_MESSAGE)),
            ("non_preferred_output", pa.list_(_MESSAGE)),
        ]
    ),
}


def _loadable(counts: dict[str, int]) -> list[str]:
    return [s for s, n in counts.items() if n] or list(counts)


def _rows(entry: dict) -> str:
    return ", ".join(f"{split} {n}" for split, n in entry["counts"].items())


def _left_out(entry: dict) -> str:
    return ", ".join(f"{reason} {n}" for reason, n in entry["left_out"].items()) or "none"


def folder_card(config: str, entry: dict, version: str) -> str:
    """The card of one OpenAI folder (`<config>/README.md`); `entry`: its manifest entry."""
    meta = {
        "configs": [
            {
                "config_name": "default",
                "data_files": [
                    {"split": s, "path": f"{s}.jsonl"} for s in _loadable(entry["counts"])
                ],
            }
        ],
        "dataset_info": {"config_name": "default", "features": hf_features(SCHEMAS[config])},
    }
    fields = "\n".join(f"| `{k}` | {v} |" for k, v in EXPORT_FIELDS[config].items())
    return f"""{front_matter(meta)}

# `{config}` of turnlake release `{version}`

{EXPORT_PURPOSE[config]} Made from the release's `{entry["dataset"]}` rows (format version
{entry["format"]}); the release's `manifest.json` lists these files with their sha256.

Lines: {_rows(entry)}. Rows left out (breaking a rule of the format): {_left_out(entry)}.

| field | meaning |
|---|---|
{fields}
"""


def write_folder_cards(release: Path, openai: dict[str, dict], version: str) -> None:
    """Each OpenAI folder's card (`folder_card`), in the release folder `release`."""
    for config, entry in openai.items():
        (release / config / CARD).write_text(folder_card(config, entry, version), "utf-8")


def openai_section(openai: dict[str, dict]) -> str:
    """The release card's section on the OpenAI files."""
    if not openai:
        return "None in this release."
    rows = "\n".join(
        f"| `{config}` | `{e['dataset']}` | {_rows(e)} | {_left_out(e)} |"
        for config, e in openai.items()
    )
    return f"""Each split of `sft` and `preference` is also a JSONL file in OpenAI's fine-tuning
formats: `openai_sft/<split>.jsonl` (chat format, supervised fine-tuning) and
`openai_preference/<split>.jsonl` (preference format, `method: dpo`). Upload a split's file as a
job's `training_file` (and `validation_file`). A row that breaks a rule of the format is left out,
counted below. Each folder is also a `datasets` dataset of its own:
`load_dataset("<release>/openai_sft")` (not a config of this card: `datasets` reads one file
format per repository).

| config | made from | lines | rows left out |
|---|---|---|---|
{rows}"""
