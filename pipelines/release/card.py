"""The dataset card (README.md with Hugging Face YAML `configs`) shipped in every release."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.release.write import ReleaseRequest

DATASET_PURPOSE = {
    "sft": "Conversation prefixes ending in an assistant (or agent) message, for supervised fine-tuning "
    "(TRL `SFTTrainer`, conversational format: `messages`).",
    "preference": "Pairs of a preferred and a rejected answer to the same prompt (TRL `DPOTrainer`: "
    "`prompt`, `chosen`, `rejected`): corrections, overridden companion suggestions, rated alternatives.",
    "kto": "Single answers with a thumbs-up/down label (TRL `KTOTrainer`: `prompt`, `completion`, `label`).",
    "rl_steps": "Offline-RL steps with RLDS semantics (`observation`, `action`, `reward`, `discount`, "
    "`is_first`, `is_last`, `is_terminal`); Q-values / behaviour policy where the source logged them.",
    "decisions": "Decision points: the context (or its hash) and coordination state → action, confidence, outcome.",
}

COMMON_COLUMNS = {
    "split": "train / validation / test, assigned per group (never per row).",
    "episode_id": "Canonical episode id (`<source>:<native id>`).",
    "group_id": "Leakage unit: all rows of a group are in one split.",
    "source": "Raw source: scenario, study, social_rl, dialogue or decision.",
    "prompt_hash": "sha256 of the exact prompt text; no prompt appears in two splits.",
    "reward": "Reward in [-1, 1] from the gold reward rules (null where no signal).",
    "reward_rule": "Rule that produced the reward, `name@version` (see `rewards` in manifest.json config).",
    "feedback_ids": "Feedback rows the reward was computed from (traceable to the human/judge signal).",
}


def _yaml_configs(layout: dict[str, list[dict]]) -> str:
    lines = ["---", "configs:"]
    for name, files in layout.items():
        lines += [f"- config_name: {name}", "  data_files:"]
        for split in dict.fromkeys(f["split"] for f in files):
            lines += [f"  - split: {split}", f'    path: "{name}/{split}*.parquet"']
    lines += ["license: other", "---"]
    return "\n".join(lines)


def _dataset_section(name: str, schema: dict, files: list[dict]) -> str:
    rows = {}
    for f in files:
        rows[f["split"]] = rows.get(f["split"], 0) + f["rows"]
    out = [f"### `{name}`", "", DATASET_PURPOSE.get(name, ""), "",
           "Rows: " + ", ".join(f"{s} {n}" for s, n in rows.items()), "", "| column | type | meaning |", "|---|---|---|"]
    out += [f"| `{col}` | `{dtype}` | {COMMON_COLUMNS.get(col, '')} |" for col, dtype in schema.items()]
    return "\n".join(out)


def render_card(version: str, request: ReleaseRequest, layout: dict[str, list[dict]]) -> str:
    splits = request.config.get("splits", {})
    sections = [_dataset_section(n, dict(request.datasets[n].schema), layout[n]) for n in layout]
    return f"""{_yaml_configs(layout)}

# turnlake training sets — release `{version}`

Built by turnlake {request.package_version} (commit `{request.git_commit}`) from
{len(request.raw_fingerprints)} raw files (fingerprints in `manifest.json`). Immutable: verify with
`turnlake verify {version}`.

## Load

```python
from datasets import load_dataset
sft = load_dataset("parquet", data_files={{"train": "{version}/sft/train*.parquet", "test": "{version}/sft/test*.parquet"}})
# or, with this folder as a Hugging Face dataset repo: load_dataset(path, "sft")
```

```sql
-- DuckDB
SELECT * FROM read_parquet('{version}/sft/*.parquet', filename = true);
```

## Datasets

{chr(10).join(sections)}

## How rewards were computed

Every reward comes from a named, versioned rule (`reward_rule`, `name@version`) applied to typed
feedback (`feedback_ids`); the rule parameters used are in `manifest.json` → `config.rewards`, and the
formulas with their reasoning in the project's `docs/rewards.md`. Rewards are in [-1, 1].

## Split method

Rows are split by `group_id` (participant, scenario, experiment, conversation, decision session), never
by row: a stable hash of (salt, group_id) into 10 000 buckets, salt `{splits.get("salt", "?")}`, ratios
`{splits.get("ratios", "?")}`. Adding data never moves an existing group. An example whose exact prompt
also occurs in an earlier split (train before validation before test) is dropped from the later one.
`split_proof.json` holds the evidence (overlap counts, salt, the SQL used): no group, participant/actor
or exact-duplicate prompt appears in two splits.

## Known limitations

- Rewards are only as good as the signals: thumbs ratings, LLM-judge stances, self-reported outcomes.
- Sources differ in size; the mix is not balanced.
- Records that failed validation are not here (they are counted in the warehouse `quarantine` table).

## Privacy

The raw logs contain personal data (study survey answers, e-mail addresses, free text). Survey answers
are never exported. {_privacy_line(request.config.get("privacy", {}))}
"""


def _privacy_line(privacy: dict) -> str:
    if privacy.get("pseudonymized") and privacy.get("redacted"):
        return ("Participant, actor and user ids are keyed pseudonyms and free text is redacted; the "
                "redaction ledger counts what was replaced.")
    return ("**This release is NOT pseudonymised or redacted**: ids are the sources' own ids and text is "
            "as recorded. Do not share it outside the team that owns the raw data.")
