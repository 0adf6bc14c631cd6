"""`turnlake subject show KIND ID`: every row about one subject across silver and gold."""

from __future__ import annotations

import argparse
import sys

import polars as pl

from pipelines.config import Settings


def cmd_subject_show(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.io import read_table
    from pipelines.layout import Layout
    from pipelines.privacy.subjects import subject_rows
    from pipelines.schemas.gold import GOLD_MODELS
    from pipelines.schemas.silver import SILVER_MODELS

    layout = Layout(settings.data_root)
    if not layout.silver_link.exists():
        print("no silver tables yet: run `turnlake build` first", file=sys.stderr)
        return 2
    tables = {t: read_table(layout.silver(t)) for t in SILVER_MODELS}
    tables |= {f"gold.{t}": read_table(layout.gold(t)) for t in GOLD_MODELS if layout.gold(t).exists()}
    try:
        rows = subject_rows(tables, args.kind, args.id)
    except ValueError as err:
        print(f"turnlake subject: {err}", file=sys.stderr)
        return 2
    total = sum(frame.height for frame in rows.values())
    with pl.Config(tbl_rows=20, tbl_cols=8, fmt_str_lengths=60, tbl_width_chars=160):
        for name, frame in rows.items():
            if frame.height:
                print(f"\n{name}: {frame.height} rows")
                print(frame)
    print(f"\n{args.kind} {args.id}: {total} rows across {sum(1 for f in rows.values() if f.height)} tables")
    return 0


def register(sub, roots, settings_of) -> None:
    subject = sub.add_parser("subject", help="review what the warehouse holds about one subject")
    actions = subject.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help="every silver and gold row about a subject")
    roots(show)
    show.add_argument("kind", choices=["participant", "actor", "scenario", "conversation"])
    show.add_argument("id")
    show.set_defaults(func=lambda args: cmd_subject_show(args, settings_of(args)))
