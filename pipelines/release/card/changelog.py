"""A release diff (diff.py) as Markdown: what `turnlake diff` prints and a new release's card
carries as its changelog."""

from __future__ import annotations

from typing import Any

from pipelines.release.card.diff import ReleaseDiff

_MOVED_ROWS = (
    'Rows in another split than before: {} ("moved in"). Their group was renamed: a unit earlier '
    "than its first joined it, or it merged with another group through a shared person. Do not "
    "evaluate a model trained on the old release's training split on them."
)


def _number(value: Any) -> str:
    return "–" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)


def diff_markdown(diff: ReleaseDiff) -> str:
    """The diff as Markdown (the CLI prints it; a card carries it as its changelog)."""
    out = [f"Compared with `{diff.old}` (rows matched by their identity, not by counts).", ""]
    out += [
        "| dataset | split | before | after | added | removed | changed | moved in |",
        "|---|---|---|---|---|---|---|---|",
    ]
    out += [
        f"| `{r['dataset']}` | {r['split']} | {r['before']} | {r['after']} | {r['added']} | "
        f"{r['removed']} | {r['changed']} | {r['moved_in']} |"
        for r in diff.rows
    ]
    moved = diff.moved_groups
    out += ["", f"Groups that moved split: {len(moved)} (must be 0)."]
    out += [f"- `{g['group_id']}`: {g['old_split']} → {g['new_split']}" for g in moved[:20]]
    moved_rows = sum(r["moved_in"] for r in diff.rows)
    if moved_rows:
        out += ["", _MOVED_ROWS.format(moved_rows)]
    if diff.rewards:
        out += ["", "| dataset | column | release | n | mean | p10 | p50 | p90 |"]
        out += ["|---|---|---|---|---|---|---|---|"]
        out += [
            f"| `{s['dataset']}` | `{s['column']}` | {s['release']} | {s['n']} | "
            + " | ".join(_number(s[k]) for k in ("mean", "p10", "p50", "p90"))
            + " |"
            for s in diff.rewards
        ]
    if diff.labels:
        out += [
            "",
            "KTO labels: "
            + "; ".join(
                f"{str(x['label']).lower()} {x['before']} → {x['after']}" for x in diff.labels
            )
            + ".",
        ]
    out += [
        "",
        "Configuration changes: "
        + (
            "; ".join(f"`{c['key']}` {c['before']!r} → {c['after']!r}" for c in diff.config)
            or "none"
        )
        + ".",
    ]
    out += [
        "",
        "Code changes: "
        + ("; ".join(f"{c['field']} `{c['before']}` → `{c['after']}`" for c in diff.code) or "none")
        + ".",
    ]
    raw = diff.raw_files
    out += [
        "",
        (
            f"Raw files: {raw.get('added', 0)} added, {raw.get('removed', 0)} removed, "
            f"{raw.get('changed', 0)} changed."
        ),
    ]
    return "\n".join(out)
