"""`turnlake subject show KIND ID` (every row about a subject) and `turnlake forget KIND ID`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from pipelines.config.settings import Settings


def cmd_subject_show(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.privacy.subjects import subject_rows
    from pipelines.schemas.gold import GOLD_MODELS
    from pipelines.schemas.silver import SILVER_MODELS
    from pipelines.storage.files import read_table
    from pipelines.storage.layout import Layout

    layout = Layout(settings.data_root)
    if not layout.silver_link.exists():
        print("no silver tables yet: run `turnlake build` first", file=sys.stderr)
        return 2
    tables = {t: read_table(layout.silver(t)) for t in SILVER_MODELS}
    tables |= {
        f"gold.{t}": read_table(layout.gold(t)) for t in GOLD_MODELS if layout.gold(t).exists()
    }
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
    print(
        f"\n{args.kind} {args.id}: {total} rows across {sum(1 for f in rows.values() if f.height)} tables"
    )
    return 0


def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.cli.main import main as turnlake
    from pipelines.privacy.forget import mentions_text, record_forget, rewrite_releases
    from pipelines.privacy.pseudonyms import Pseudonymizer
    from pipelines.release.files import complete_releases
    from pipelines.release.privatize import pseudonym_key
    from pipelines.release.verify import verify_release
    from pipelines.storage.layout import Layout
    from pipelines.storage.lock import DataRootBusy, data_root_lock

    layout = Layout(settings.data_root)
    try:
        with data_root_lock(settings.layout, wait=args.wait):
            key, _ = pseudonym_key(settings)
            tombstone = record_forget(
                settings.raw_root, settings.data_root, args.kind, args.id, key
            )
            print(f"tombstone {tombstone['tombstone_id']} recorded; rebuilding without the subject")
            code = turnlake(
                [
                    "build",
                    "--raw-root",
                    str(settings.raw_root),
                    "--data-root",
                    str(settings.data_root),
                    "--log-level",
                    "WARNING",
                ]
            )
            if code != 0:
                print(
                    "turnlake forget: the rebuild failed; releases were not rewritten",
                    file=sys.stderr,
                )
                return code
            needles = [args.id, Pseudonymizer(key).pseudonym("person", args.id)]
            rewritten = rewrite_releases(layout.exports, needles, tombstone)
    except DataRootBusy as busy:
        print(f"turnlake forget: {busy}", file=sys.stderr)
        return 3
    for version, rows in rewritten.items():
        print(f"release {version}: {rows} rows removed (manifest deletion log updated)")
    problems = [
        f"{v}: {p}"
        for v in complete_releases(layout.exports)
        for p in verify_release(layout.exports / v)
    ]
    for problem in problems:
        print(f"MISMATCH {problem}", file=sys.stderr)
    raw_files = [
        p
        for p in Path(settings.raw_root).rglob("*")
        if p.is_file() and mentions_text(str(p), [args.id])
    ]
    if raw_files:
        print(
            f"{len(raw_files)} raw files are named after the subject; turnlake no longer reads them — "
            "erase them at the source:"
        )
        for path in raw_files:
            print(f"  {path}")
    print(
        "forgotten; every release verifies"
        if not problems
        else f"forgotten, but {len(problems)} release problems"
    )
    return 0 if not problems else 1


def register(sub, roots, settings_of) -> None:
    subject = sub.add_parser("subject", help="review what the warehouse holds about one subject")
    actions = subject.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help="every silver and gold row about a subject")
    roots(show)
    show.add_argument("kind", choices=["participant", "actor", "scenario", "conversation"])
    show.add_argument("id")
    show.set_defaults(func=lambda args: cmd_subject_show(args, settings_of(args)))

    forget = sub.add_parser(
        "forget", help="tombstone a subject and remove it from silver, gold and every release"
    )
    roots(forget)
    forget.add_argument("kind", choices=["participant", "actor", "scenario", "conversation"])
    forget.add_argument("id")
    forget.add_argument("--wait", type=float, default=0.0, metavar="SECONDS")
    forget.set_defaults(func=lambda args: cmd_forget(args, settings_of(args)))
