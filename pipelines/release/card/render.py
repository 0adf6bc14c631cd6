"""The dataset card (README.md with Hugging Face YAML metadata) shipped in every release."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.exports.datasets.chat_shape import LATE_SYSTEM_PREFIX, OPENING_PREFIX
from pipelines.exports.datasets.sft import SCENARIO_PREFIX
from pipelines.release.card.agreement import agreement_section
from pipelines.release.card.columns import DATASET_PURPOSE, column_description
from pipelines.release.card.meta import Config, card_metadata, card_warnings, front_matter
from pipelines.release.card.minari import minari_section
from pipelines.release.card.openai import openai_section

if TYPE_CHECKING:
    from pipelines.release.build.request import ReleaseRequest


def release_configs(
    request: ReleaseRequest, layout: dict[str, list[dict]], profiles: list[Config] = ()
) -> list[Config]:
    """The release's configs: one per written dataset, then the profiles' (write.py)."""
    return [
        Config(
            name,
            name,
            name,
            request.stats(name),
            tuple(dict.fromkeys(f["split"] for f in files)),
        )
        for name, files in layout.items()
    ] + list(profiles)


def _default_config(configs: list[Config]) -> str | None:
    """`sft`, or the first dataset with rows when it has none (`load_dataset(release)` loads the
    default, and `datasets` cannot load a config of 0 rows: meta.loadable_splits)."""
    names = [c.name for c in configs if c.name == c.dataset]
    with_rows = [c.name for c in configs if c.name == c.dataset and c.stats.height]
    if "sft" in names and ("sft" in with_rows or not with_rows):
        return "sft"
    return (with_rows or names or [None])[0]


def _dataset_section(config: Config) -> str:
    rows = config.stats.rows
    out = [
        f"### `{config.name}`",
        "",
        DATASET_PURPOSE.get(config.dataset, ""),
        "",
        "Rows: " + ", ".join(f"{s} {rows.get(s, 0)}" for s in config.splits),
        "",
        "| column | type | meaning |",
        "|---|---|---|",
    ]
    out += [
        f"| `{col}` | `{dtype}` | {column_description(config.dataset, col)} |"
        for col, dtype in config.stats.schema.items()
    ]
    return "\n".join(out)


def _profiles_section(configs: list[Config], profiles: dict) -> str:
    chosen = [c for c in configs if c.name != c.dataset]
    if not profiles:
        return "No release profiles (`[release.profiles.<name>]` in turnlake.toml adds them)."
    lines = [
        (
            "Each profile of turnlake.toml `[release.profiles]` is published as its own config: "
            "`<profile>` when it selects one dataset, `<profile>-<dataset>` otherwise (files under "
            "`profiles/<config>/`). A profile only filters the released rows."
        ),
        "",
        "| config | dataset | selection | rows |",
        "|---|---|---|---|",
    ]
    for c in chosen:
        profile = c.name.split("-")[0]
        selection = ", ".join(
            f"{k} = {v}" for k, v in profiles[profile].items() if v not in (None, False)
        )
        rows = c.stats.rows
        lines.append(
            f"| `{c.name}` | `{c.dataset}` | {selection or 'everything'} | "
            + ", ".join(f"{s} {rows.get(s, 0)}" for s in c.splits)
            + " |"
        )
    empty = [f"`{c.name}`" for c in chosen if c.stats.height == 0]
    if empty:
        lines += [
            "",
            "Profile configs with no rows in this release (empty files): " + ", ".join(empty),
        ]
    missing = sorted(set(profiles) - {c.name.split("-")[0] for c in chosen})
    if missing:
        lines += [
            "",
            "Profiles of no dataset this release publishes (no config): " + ", ".join(missing),
        ]
    return "\n".join(lines)


def _warnings_section(configs: list[Config], request: ReleaseRequest) -> str:
    ratios = (request.config.get("splits") or {}).get("ratios") or {"train": 0.8, "test": 0.2}
    found = card_warnings(configs, request.config.get("card") or {}, ratios)
    return "\n".join(f"- {w}" for w in found) or "None."


def render_card(
    version: str,
    request: ReleaseRequest,
    layout: dict[str, list[dict]],
    configs: list[Config] | None = None,
    changelog: str | None = None,
    openai: dict[str, dict] | None = None,
    minari: dict | None = None,
) -> str:
    """The card: Hugging Face metadata, warnings, changelog (`changelog`: the diff against the
    previous release, diff.py), datasets with every column described, profiles, the OpenAI
    files (`openai`: the manifest's section, store/openai_files.py), the Minari datasets
    (`minari`: the manifest's section, store/minari_files.py), rules."""
    splits = request.config.get("splits", {})
    configs = configs if configs is not None else release_configs(request, layout)
    default = _default_config(configs)
    meta = card_metadata(configs, request.config.get("card") or {}, default)
    sections = [_dataset_section(c) for c in configs if c.name == c.dataset]
    return f"""{front_matter(meta)}

# turnlake training sets — release `{version}`

Built by turnlake {request.package_version} (commit `{request.git_commit}`) from
{len(request.raw_fingerprints)} raw files (fingerprints in `manifest.json`). Immutable: verify with
`turnlake verify {version}`.

## Load

```python
from datasets import load_dataset
sft = load_dataset("{version}", "sft")  # this folder; configs: {", ".join(c.name for c in configs)}
```

```sql
-- DuckDB
SELECT * FROM read_parquet('{version}/sft/*.parquet', filename = true);
```

## Warnings

{_warnings_section(configs, request)}

## Changes since the previous release

{changelog or "This is the first release of this data root."}

## Datasets

{chr(10).join(sections)}

## Profiles

{_profiles_section(configs, request.config.get("profiles") or {})}

## OpenAI fine-tuning files

{openai_section(openai or {})}

## Offline RL: Minari datasets

{minari_section(minari)}

## How rewards were computed

Every reward comes from a named, versioned rule (`reward_rule`, `name@version`) applied to typed
feedback (`feedback_ids`); the rule parameters used are in `manifest.json` → `config.rewards`, and the
formulas with their reasoning in the project's `docs/rewards.md`. Rewards are in [-1, 1].
Reward rules in force: {_enabled_rules(request.config)}.

{rules_section(request.config.get("release", {}), request.proof)}

## Rater agreement

{agreement_section(request.agreement, request.config.get("release", {}), request.proof)}

## Split method

Rows are split by `group_id` (participant, scenario, experiment, conversation, decision session), never
by row: a stable hash of (salt, group_id) into 10 000 buckets, salt `{splits.get("salt", "?")}`, ratios
`{splits.get("ratios", "?")}`. {_grouping_line(splits)}
Adding data never moves an existing group. An example whose exact prompt
also occurs in an earlier split (train before validation before test) is dropped from the later one.
An `rl_steps` example is a whole episode (its prompt is the episode's whole observation/action
sequence), so an episode is kept or dropped whole, never cut. `split_proof.json` holds the evidence
(overlap counts, salt, the SQL used): no group, participant/actor or exact-duplicate prompt appears in
two splits.

## Known limitations

- Rewards are only as good as the signals: thumbs ratings, LLM-judge stances, self-reported outcomes.
- Sources differ in size; the mix is not balanced.
- Records that failed validation are not here (they are counted in the warehouse `quarantine` table).

## Privacy

The raw logs contain personal data (study survey answers, e-mail addresses, free text). Survey answers
are never exported. {_privacy_line(request.config.get("privacy", {}))}
{_redaction_counts(request.config.get("privacy", {}), request.redaction_ledger)}"""


def _enabled_rules(config: dict) -> str:
    enabled = ((config.get("rewards") or {}).get("rules") or {}).get("enabled") or []
    return ", ".join(f"`{rule}`" for rule in enabled) or "not recorded"


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v) or "none"


def _left_out(proof: dict, dataset: str, reason: str) -> int:
    return int(((proof.get("left_out") or {}).get(dataset) or {}).get(reason, 0))


def rules_section(release: dict, proof: dict) -> str:
    """Every rule that decides a label, a pair, an example or the row order (docs/rewards.md §
    Release rules has the reasoning), with this release's settings and what each rule left out."""
    negative, neutral = (
        release.get("sft_include_negative", False),
        release.get("kto_include_neutral", False),
    )
    no_user = {
        name: _left_out(proof, name, "no_user_turn") for name in ("sft", "kto", "preference")
    }
    dropped = proof.get("dropped_duplicate_prompts") or {}
    twins = proof.get("dropped_duplicate_rows") or {}
    sft_negative = (
        "kept (`[release] sft_include_negative = true`)"
        if negative
        else f"left out ({_left_out(proof, 'sft', 'negative_reward')} examples; "
        "`[release] sft_include_negative = true` keeps them)"
    )
    kto_neutral = (
        "kept and labelled false (`[release] kto_include_neutral = true`)"
        if neutral
        else f"left out ({_left_out(proof, 'kto', 'neutral_reward')} rows; "
        "`[release] kto_include_neutral = true` keeps them, labelled false)"
    )
    return f"""## Rules that decide labels, pairs and examples

- `sft`: one example per assistant turn (per agent message in Social RL): the visible conversation
  before it plus that turn; `reward` is the final turn's. Examples whose final turn has a negative
  reward are {sft_negative}.
- `kto`: `label` is the sign of `reward`: reward > 0 desirable (true), reward < 0 undesirable (false).
  Rows with reward exactly 0 are {kto_neutral}.
- `preference`: `pair_kind` says which evidence made the pair (a user's correction, a companion
  suggestion the human overrode, differently rated answers to one prompt within one group). Chosen and
  rejected answer the same `prompt`; a pair never prefers the answer with the lower known reward
  (`reward_chosen`, `reward_rejected` where known).
- `rl_steps`: step t holds the observation before the action, the action and the reward that followed
  it; every episode is whole (step 0 `is_first`, contiguous steps, one `is_last`); `is_terminal`
  (discount 0) only where the episode really ended (study agreement or refusal), otherwise truncated.
- `stepwise`: one example per study session (the operator's replies) and per Social RL agent of a
  run (one step per round); each step's label is `label_rule` over its reward (`rewards`), the
  thresholds in `manifest.json` → `config.rewards`; an example ends before its first unrewarded step.
- Duplicate prompts across splits are removed from the later split, whole examples only (dropped:
  {", ".join(f"{k} {v}" for k, v in sorted(dropped.items())) or "none"}). Exact duplicate rows
  (`sft`: the same messages; `kto`: the same prompt and completion; `preference`: the same prompt,
  chosen and rejected) are released once (left out: {_counted(twins)}).{_decontaminated(proof)}
- Rows are in a stable pseudo-random order: by sha256 of the row's id (`rl_steps`: of the episode id,
  then by step), so every source is mixed in a file and a row keeps its place when rows are added.

## Chat shape

Every chat row (`sft` messages, `kto` prompt + completion, `preference` prompt + chosen and prompt +
rejected) is at most one system message, then user and assistant turns alternating from a user
turn, ending with an assistant turn, so strict chat templates (Llama-2 / Mistral style) render it.
Sources that do not speak that way are mapped into it:

1. system messages before the first user turn are joined into one leading system message (a study
   session's scenario is the first: `{SCENARIO_PREFIX}…`);
2. an assistant turn before any user turn (the study operator's or a moderator's opening) becomes
   system context: `{OPENING_PREFIX}…`;
3. a later system message becomes user text `{LATE_SYSTEM_PREFIX}…`; other agents of a Social RL
   round are user turns named `Name: text`;
4. consecutive turns of one role are merged into one, texts joined by a blank line;
5. when the assistant spoke twice in a row before a completion, the earlier turn starts the
   completion (the same text on chosen and rejected);
6. a row with no user turn at all cannot be a chat and is left out (sft {no_user["sft"]}, kto
   {no_user["kto"]}, preference {no_user["preference"]}).

Checked on this release's own files before it was published (`release_is_trainable`): RLDS
invariants per episode, the chat shape of every row, preference prompts and reward order, KTO label =
sign of the reward, no reward with the opposite sign of the outcome it came from."""


def _decontaminated(proof: dict) -> str:
    """The card's line on `[release] decontaminate` (none without evaluation sets): the rows that
    left train and validation per evaluation set and dataset (docs/concepts/decontamination.md)."""
    found = proof.get("decontamination")
    if not found:
        return ""
    per_set = "; ".join(
        f"`{name}`: " + (", ".join(f"{d} {n}" for d, n in sorted(left.items())) or "none")
        for name, left in found["rows_left"].items()
    )
    return (
        "\n- Rows whose user text overlaps an evaluation prompt (n-gram overlap or a MinHash "
        "near-duplicate) left the train and validation splits; test keeps them (left: "
        f"{per_set})."
    )


def _privacy_line(privacy: dict) -> str:
    if privacy.get("pseudonymized") and privacy.get("redacted"):
        return (
            "Participant, actor and user ids are keyed pseudonyms and free text is redacted; the "
            "redaction ledger counts what was replaced."
        )
    return (
        "**This release is NOT pseudonymised or redacted**: ids are the sources' own ids and text "
        "is "
        "as recorded. Do not share it outside the team that owns the raw data."
    )


def _redaction_counts(privacy: dict, ledger: dict[str, dict[str, int]] | None) -> str:
    """Replacements per redaction kind over all datasets (every kind enabled, so a 0 says it was
    looked for), from the redaction ledger; nothing for a release that was not redacted."""
    kinds = (privacy.get("redaction") or {}).get("kinds")
    if not privacy.get("redacted") or ledger is None or not kinds:
        return ""
    totals = {kind: sum(counts.get(kind, 0) for counts in ledger.values()) for kind in kinds}
    listed = ", ".join(f"`{kind}` {n}" for kind, n in totals.items())
    ids = sum(counts.get("pseudonym", 0) for counts in ledger.values())
    return f"\nReplaced in all datasets, by kind: {listed}; subject ids pseudonymized: {ids}.\n"


def _grouping_line(splits: dict) -> str:
    """Which people link units into one group (`[splits] link_raters`)."""
    common = (
        "A group also takes in every unit that shares a person with it: all sessions of a study "
        "participant, all decision sessions of a human actor"
    )
    if splits.get("link_raters", True):
        return (
            f"{common}, and all conversations a dialogue rater rated (so no rater's labels are in "
            "two splits)."
        )
    return (
        f"{common}; dialogue raters do not link conversations (`[splits] link_raters = false`), so "
        "a rater may have labelled conversations in several splits."
    )
