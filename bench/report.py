"""Markdown tables (figures, per-asset step times) from a bench/results/<timestamp>.json.

Usage: python bench/report.py bench/results/<timestamp>.json [--reparse]
(--reparse: re-read the per-step times from the kept logs under each run's work folder and
recompute the figures, e.g. after a fix to the log parser.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RUNS = [
    "startup",
    "startup_no_bytecode_cache",
    "page_cache_warmup",
    "lower_bound",
    "peer_pandas_study",
    "full_build",
    "nochange_rebuild",
    "rebuild_1pct_new",
    "release_unchanged",
    "release_fresh",
]


def reparse(path: Path, result: dict) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from figures import figures
    from measure import step_times

    for label, size in result["sizes"].items():
        logs = Path(size["corpus"]["raw"]).parents[1] / f"run-{label}" / "logs"
        for name, m in size["runs"].items():
            if (logs / f"{name}.log").exists():
                m["steps_ms"] = step_times(logs / f"{name}.log")
        size["figures"] = figures(label, size["corpus"], size["runs"])
    path.write_text(json.dumps(result, indent=1))


def main(path: Path, again: bool = False) -> None:
    result = json.loads(path.read_text())
    if again:
        reparse(path, result)
    sizes = result["sizes"]
    labels = list(sizes)
    print(
        "| measurement | "
        + " | ".join(f"{s}: wall s / CPU s / peak RSS MB / exit" for s in labels)
        + " |"
    )
    print("|---|" + "---|" * len(labels))
    for run in RUNS:
        cells = []
        for s in labels:
            m = sizes[s]["runs"].get(run)
            cells.append(
                "—"
                if m is None
                else f"{m['wall_s']:.1f} / {m['cpu_s']:.1f} / {m['peak_rss_mb']:.0f} / "
                f"{m['returncode']}"
            )
        print(f"| {run} | " + " | ".join(cells) + " |")
    print()
    keys = [
        k
        for k in sizes[labels[0]]["figures"]
        if "/" in k
        or k.endswith(("_s", "share", "mb_per_s"))
        and "." not in k
        or k.startswith(
            ("1pct.", "full_build.steps", "nochange.steps", "full_build.mb", "full_build.proj")
        )
    ]
    print("| figure | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for key in ["scale", "files", "mb", *keys]:
        print(
            f"| {key} | "
            + " | ".join(str(sizes[s]["figures"].get(key, "—")) for s in labels)
            + " |"
        )
    print()
    steps = sorted(
        {
            k
            for s in labels
            for run in ("full_build", "nochange_rebuild")
            for k in sizes[s]["runs"].get(run, {}).get("steps_ms", {})
        }
    )
    heads = [
        f"{s} {run}"
        for s in labels
        for run in ("full_build", "nochange_rebuild", "rebuild_1pct_new")
    ]
    print("| Dagster step (ms) | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(heads))
    totals = [0.0] * len(heads)
    for step in steps:
        row = []
        for i, (s, run) in enumerate(
            (s, run)
            for s in labels
            for run in ("full_build", "nochange_rebuild", "rebuild_1pct_new")
        ):
            v = sizes[s]["runs"].get(run, {}).get("steps_ms", {}).get(step)
            totals[i] += v or 0
            row.append("—" if v is None else f"{v:.0f}")
        print(f"| {step} | " + " | ".join(row) + " |")
    print("| **sum of steps** | " + " | ".join(f"{t:.0f}" for t in totals) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1]), "--reparse" in sys.argv[2:])
