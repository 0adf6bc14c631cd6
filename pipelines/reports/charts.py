"""The report's plots: Vega-Lite specs built with Altair, pre-rendered to inline SVG by
vl-convert (Vega in an embedded JavaScript engine), so the page needs no script, CDN or network.

Why not Plotly: its self-contained HTML inlines plotly.js (~4.6 MB) in every file; an inline SVG
per plot keeps a report at tens of kB and draws in any browser, even with scripts off.
"""

from __future__ import annotations

import altair as alt
import polars as pl

WIDTH = 560


def to_svg(chart: alt.TopLevelMixin) -> str:
    """The chart drawn as one `<svg>` element (text, no external fonts or images)."""
    import vl_convert  # its JavaScript engine starts with the first plot a process draws

    # Unvalidated: the same dict, without loading Vega-Lite's JSON schema (~0.4 s a process);
    # the charts are ours, and vl-convert rejects a bad spec when it draws one.
    return vl_convert.vegalite_to_svg(chart.to_dict(validate=False))


def reward_distribution(ticks: pl.DataFrame) -> alt.Chart:
    """One strip of ticks per source and rule: where the rewards fall in [-1, 1], a tick the
    more opaque the more rewards it stands for (`numbers.reward_ticks`)."""
    frame = ticks.with_columns(
        pl.concat_str("source", pl.lit(" · "), "reward_rule").alias("source · rule")
    )
    return (
        alt.Chart(frame, title="Rewards per source and rule")
        .mark_tick(thickness=2)
        .encode(
            x=alt.X("reward:Q", scale=alt.Scale(domain=[-1, 1])),
            y=alt.Y("source · rule:N", title=None, axis=alt.Axis(labelLimit=320)),
            color=alt.Color("source:N", legend=None),
            opacity=alt.Opacity(
                "rewards:Q", scale=alt.Scale(type="log", range=[0.3, 1]), legend=None
            ),
            tooltip=["source", "reward_rule", "reward", "rewards"],
        )
        .properties(width=WIDTH)
    )


def agreement_by_policy(frame: pl.DataFrame) -> alt.Chart:
    """Character × IQL policy: share of rewarded steps that moved the resident toward AGREE."""
    base = alt.Chart(frame, title="Share of steps toward agreement, by character and policy")
    heat = base.mark_rect().encode(
        x=alt.X("selected_policy:N", title="IQL policy"),
        y=alt.Y("character:N", title="character"),
        color=alt.Color("share_toward_agree:Q", scale=alt.Scale(domain=[0, 1])),
        tooltip=["character", "selected_policy", "steps", "share_toward_agree"],
    )
    text = base.mark_text(fontSize=10).encode(
        x="selected_policy:N", y="character:N", text=alt.Text("steps:Q")
    )
    return (heat + text).properties(width=WIDTH)


def q_values_over_turns(frame: pl.DataFrame) -> alt.Chart:
    """Mean Q-value of the selected policy and of the best alternative per IQL step."""
    long = frame.unpivot(
        on=["mean_q_selected", "mean_q_best_alternative"],
        index="step",
        variable_name="series",
        value_name="q_value",
    )
    return (
        alt.Chart(long, title="Q-values over turns (IQL steps)")
        .mark_line(point=True)
        .encode(
            x=alt.X("step:O"),
            y=alt.Y("q_value:Q", title="mean Q", scale=alt.Scale(zero=False)),
            color="series:N",
        )
        .properties(width=WIDTH)
    )


def engagement_over_rounds(frame: pl.DataFrame) -> alt.Chart:
    """Mean agent engagement per Social RL round."""
    return (
        alt.Chart(frame, title="Agent engagement over rounds (Social RL)")
        .mark_line(point=True)
        .encode(
            x=alt.X("round_number:O", title="round"),
            y=alt.Y("mean_engagement:Q", title="mean engagement"),
        )
        .properties(width=WIDTH)
    )


def quarantine_by_night(frame: pl.DataFrame) -> alt.Chart:
    """Quarantined records per night, stacked by error kind."""
    shown = frame.with_columns(pl.col("night").cast(pl.String).fill_null("(unknown)"))
    return (
        alt.Chart(shown, title="Quarantined records by kind over nights")
        .mark_bar()
        .encode(
            x=alt.X("night:O"),
            y=alt.Y("sum(n):Q", title="records"),
            color=alt.Color("error_kind:N"),
            tooltip=["night", "source", "error_kind", "n"],
        )
        .properties(width=WIDTH)
    )


def split_sizes(frame: pl.DataFrame) -> alt.Chart:
    """Groups per split."""
    return (
        alt.Chart(frame, title="Groups per split")
        .mark_bar()
        .encode(x=alt.X("groups:Q"), y=alt.Y("split:N"))
        .properties(width=WIDTH)
    )


def release_contents(frame: pl.DataFrame) -> alt.Chart:
    """Rows per released dataset, stacked by split."""
    return (
        alt.Chart(frame, title="Release rows per dataset and split")
        .mark_bar()
        .encode(x=alt.X("rows:Q"), y=alt.Y("dataset:N"), color=alt.Color("split:N"))
        .properties(width=WIDTH)
    )
