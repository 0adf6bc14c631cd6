"""The card's "Rater agreement" section: Krippendorff's alpha per score name (gold/agreement.py)
and the label minimum of `[release]` with what it left out."""

from __future__ import annotations

from pipelines.gold.raters import AGREEMENT_NOT_RECORDED, BELOW_MIN_AGREEMENT, BELOW_MIN_RATERS


def _alpha_lines(rows: list[dict]) -> list[str]:
    computed = [r for r in rows if r["status"] == "computed"]
    lines = [
        "| score name | level | alpha | items | ratings | most raters of one item |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| `{r['name']}` | {r['level']} | {r['alpha']:.3f} | {r['n_items']} | "
        f"{r['n_ratings']} | {r['max_raters']} |"
        for r in computed
    ]
    if not computed:
        lines = ["No score name has an item rated by 2 or more raters in this release's data."]
    by_reason: dict[str, list[str]] = {}
    for r in rows:
        if r["status"] != "computed":
            by_reason.setdefault(r["reason"], []).append(f"`{r['name']}`")
    if by_reason:
        lines += ["", "Not computable:"]
        lines += [
            f"- {reason}: {', '.join(dict.fromkeys(names))}"
            for reason, names in sorted(by_reason.items())
        ]
    return lines


def _minimum_line(release: dict, left_out: dict) -> str:
    raters, agreement = release.get("min_raters"), release.get("min_label_agreement")
    if raters is None and agreement is None:
        return (
            "No label minimum: every rater-combined reward is released (`[release] min_raters` / "
            "`min_label_agreement` set one)."
        )
    counts = left_out.get("labels") or {}
    wanted = ", ".join(
        part
        for part in (
            f"at least {raters} raters" if raters is not None else "",
            f"agreement at least {agreement}" if agreement is not None else "",
        )
        if part
    )
    return (
        f"Label minimum: a reward combined from raters needs {wanted}. Left out: "
        f"{counts.get(BELOW_MIN_RATERS, 0)} below the raters minimum, "
        f"{counts.get(BELOW_MIN_AGREEMENT, 0)} below the agreement minimum, "
        f"{counts.get(AGREEMENT_NOT_RECORDED, 0)} whose raters' spread the source does not record."
    )


def agreement_section(rows: list[dict] | None, release: dict, proof: dict) -> str:
    """Markdown for the card: the alpha table, the names not computable and why, the minimum."""
    intro = (
        "Krippendorff's alpha per score name over the items (judged turns, decisions, rounds) "
        "that 2 or more raters scored, at the level of measurement scores.toml's type gives "
        "(`turnlake sql --saved rater_agreement` shows the same for the warehouse)."
    )
    body = _alpha_lines(rows) if rows is not None else ["Not recorded for this release."]
    minimum = _minimum_line(release, proof.get("left_out") or {})
    return "\n".join([intro, "", *body, "", minimum])
