"""The report's plots: Vega-Lite specs, written as plain dicts, pre-rendered to inline SVG by
vl-convert (Vega in an embedded JavaScript engine), so the page needs no script, CDN or network.

Why not Plotly: its self-contained HTML inlines plotly.js (~4.6 MB) in every file; an inline SVG
per plot keeps a report at tens of kB and draws in any browser, even with scripts off.

Why not Altair: it only wrote these dicts, and importing it cost every build ~0.6 s of CPU
(measured: `import polars, jinja2, vl_convert` 0.6 s, with altair 1.2 s). Seven small specs
need no schema-aware builder; vl-convert rejects a bad spec when it draws one.
"""

from __future__ import annotations

from typing import Any

import polars as pl

WIDTH = 560

Spec = dict[str, Any]  # a Vega-Lite specification (https://vega.github.io/vega-lite/docs/)


def to_svg(chart: Spec) -> str:
    """The chart drawn as one `<svg>` element (text, no external fonts or images)."""
    import vl_convert  # its JavaScript engine starts with the first plot a process draws

    return vl_convert.vegalite_to_svg(chart)


def _values(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """The frame's rows as JSON values, NaN as null (JSON has no NaN; Vega reads null as
    missing). The plots' frames hold no dates (a night is cast to text where it is plotted)."""
    return frame.with_columns(pl.col(pl.Float32, pl.Float64).fill_nan(None)).to_dicts()


def _chart(frame: pl.DataFrame, title: str, **spec: Any) -> Spec:
    """A single- or layered-view spec over the frame's rows, at the report's width."""
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": title,
        "data": {"values": _values(frame)},
        "width": WIDTH,
        # Altair's default view, which the plots were drawn at: 300 px high on a continuous y
        "config": {"view": {"continuousWidth": 300, "continuousHeight": 300}},
        **spec,
    }


def _field(name: str, kind: str, **channel: Any) -> dict[str, Any]:
    """An encoding channel: `kind` is Vega-Lite's type (quantitative, nominal, ordinal)."""
    return {"field": name, "type": kind, **channel}


def reward_distribution(ticks: pl.DataFrame) -> Spec:
    """One strip of ticks per source and rule: where the rewards fall in [-1, 1], a tick the
    more opaque the more rewards it stands for (`numbers.reward_ticks`)."""
    frame = ticks.with_columns(
        pl.concat_str("source", pl.lit(" · "), "reward_rule").alias("source · rule")
    )
    return _chart(
        frame,
        "Rewards per source and rule",
        mark={"type": "tick", "thickness": 2},
        encoding={
            "x": _field("reward", "quantitative", scale={"domain": [-1, 1]}),
            "y": _field("source · rule", "nominal", title=None, axis={"labelLimit": 320}),
            "color": _field("source", "nominal", legend=None),
            "opacity": _field(
                "rewards", "quantitative", scale={"type": "log", "range": [0.3, 1]}, legend=None
            ),
            "tooltip": [
                _field("source", "nominal"),
                _field("reward_rule", "nominal"),
                _field("reward", "quantitative"),
                _field("rewards", "quantitative"),
            ],
        },
    )


def agreement_by_policy(frame: pl.DataFrame) -> Spec:
    """Character × IQL policy: share of rewarded steps that moved the resident toward AGREE."""
    heat = {
        "mark": {"type": "rect"},
        "encoding": {
            "x": _field("selected_policy", "nominal", title="IQL policy"),
            "y": _field("character", "nominal", title="character"),
            "color": _field("share_toward_agree", "quantitative", scale={"domain": [0, 1]}),
            "tooltip": [
                _field("character", "nominal"),
                _field("selected_policy", "nominal"),
                _field("steps", "quantitative"),
                _field("share_toward_agree", "quantitative"),
            ],
        },
    }
    text = {
        "mark": {"type": "text", "fontSize": 10},
        "encoding": {
            "x": _field("selected_policy", "nominal"),
            "y": _field("character", "nominal"),
            "text": _field("steps", "quantitative"),
        },
    }
    title = "Share of steps toward agreement, by character and policy"
    return _chart(frame, title, layer=[heat, text])


def q_values_over_turns(frame: pl.DataFrame) -> Spec:
    """Mean Q-value of the selected policy and of the best alternative per IQL step."""
    long = frame.unpivot(
        on=["mean_q_selected", "mean_q_best_alternative"],
        index="step",
        variable_name="series",
        value_name="q_value",
    )
    return _chart(
        long,
        "Q-values over turns (IQL steps)",
        mark={"type": "line", "point": True},
        encoding={
            "x": _field("step", "ordinal"),
            "y": _field("q_value", "quantitative", title="mean Q", scale={"zero": False}),
            "color": _field("series", "nominal"),
        },
    )


def engagement_over_rounds(frame: pl.DataFrame) -> Spec:
    """Mean agent engagement per Social RL round."""
    return _chart(
        frame,
        "Agent engagement over rounds (Social RL)",
        mark={"type": "line", "point": True},
        encoding={
            "x": _field("round_number", "ordinal", title="round"),
            "y": _field("mean_engagement", "quantitative", title="mean engagement"),
        },
    )


def quarantine_by_night(frame: pl.DataFrame) -> Spec:
    """Quarantined records per night, stacked by error kind."""
    shown = frame.with_columns(pl.col("night").cast(pl.String).fill_null("(unknown)"))
    return _chart(
        shown,
        "Quarantined records by kind over nights",
        mark={"type": "bar"},
        encoding={
            "x": _field("night", "ordinal"),
            "y": _field("n", "quantitative", aggregate="sum", title="records"),
            "color": _field("error_kind", "nominal"),
            "tooltip": [
                _field("night", "nominal"),
                _field("source", "nominal"),
                _field("error_kind", "nominal"),
                _field("n", "quantitative"),
            ],
        },
    )


def split_sizes(frame: pl.DataFrame) -> Spec:
    """Groups per split."""
    return _chart(
        frame,
        "Groups per split",
        mark={"type": "bar"},
        encoding={"x": _field("groups", "quantitative"), "y": _field("split", "nominal")},
    )


def release_contents(frame: pl.DataFrame) -> Spec:
    """Rows per released dataset, stacked by split."""
    return _chart(
        frame,
        "Release rows per dataset and split",
        mark={"type": "bar"},
        encoding={
            "x": _field("rows", "quantitative"),
            "y": _field("dataset", "nominal"),
            "color": _field("split", "nominal"),
        },
    )
