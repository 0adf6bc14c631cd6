"""`turnlake release | releases | verify | pull`: versioned training sets for trainers."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from pipelines.config.settings import Settings


def print_load_hint(path: Path) -> None:
    print(f"""
release: {path}
  Python:  from datasets import load_dataset
           ds = load_dataset("parquet", data_files={{"train": "{path}/sft/train*.parquet", "test": "{path}/sft/test*.parquet"}})
  DuckDB:  turnlake sql "SELECT split, count(*) FROM release.sft GROUP BY ALL"   (views over the latest release)
           or read_parquet('{path}/sft/*.parquet') for any version""")


def cmd_release(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.release.assemble import NOTHING_TO_RELEASE, LeakageError, make_release
    from pipelines.release.trainability import UntrainableRelease
    from pipelines.release.verify import verify_release
    from pipelines.storage.layout import Layout
    from pipelines.storage.lock import DataRootBusy, data_root_lock

    if not Layout(settings.data_root).gold_link.exists():
        print("no gold tables yet: run `turnlake build` first", file=sys.stderr)
        return 2
    try:
        with data_root_lock(settings.layout, wait=args.wait):
            outcome = make_release(settings, today=datetime.now(UTC).strftime("%Y%m%d"))
    except DataRootBusy as busy:
        print(f"turnlake release: {busy}", file=sys.stderr)
        return 3
    except LeakageError as leak:
        print(f"turnlake release: refused, the split proof found leakage: {leak}", file=sys.stderr)
        return 1
    except UntrainableRelease as untrainable:
        print(
            f"turnlake release: refused, the release would not be trainable: {untrainable}",
            file=sys.stderr,
        )
        return 1
    if outcome.version is None:
        print(NOTHING_TO_RELEASE)
        return 0
    problems = verify_release(outcome.path)
    print(
        f"{'new release' if outcome.created else 'unchanged inputs: existing release'} {outcome.version}"
        f" ({'verified' if not problems else f'{len(problems)} problems'})"
    )
    print_load_hint(outcome.path)
    return 0 if not problems else 1


def cmd_releases(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.release.catalog import list_releases
    from pipelines.storage.layout import Layout

    frame = list_releases(Layout(settings.data_root).exports)
    print(frame if frame.height else "no releases yet")
    return 0


def cmd_verify(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.release.files import latest_release
    from pipelines.release.verify import verify_release
    from pipelines.storage.layout import Layout

    exports = Layout(settings.data_root).exports
    version = args.version or latest_release(exports)
    if version is None:
        print(f"no releases under {exports}", file=sys.stderr)
        return 2
    problems = verify_release(exports / version)
    for problem in problems:
        print(f"MISMATCH {problem}", file=sys.stderr)
    print(f"release {version}: {'verified' if not problems else f'{len(problems)} problems'}")
    return 0 if not problems else 1


def cmd_pull(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.release.catalog import pull_release
    from pipelines.storage.layout import Layout

    try:
        target, problems = pull_release(
            Layout(settings.data_root).exports, args.version, Path(args.to)
        )
    except (FileNotFoundError, FileExistsError) as err:
        print(f"turnlake pull: {err}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"MISMATCH {problem}", file=sys.stderr)
    print(
        f"pulled {args.version} to {target}: {'verified' if not problems else f'{len(problems)} problems'}"
    )
    return 0 if not problems else 1


def register(sub, roots, settings_of) -> None:
    """Add the release commands to the CLI's sub-parsers."""

    def bind(func):
        return lambda args: func(args, settings_of(args))

    release = sub.add_parser("release", help="write a new versioned release from the current build")
    roots(release)
    release.add_argument("--wait", type=float, default=0.0, metavar="SECONDS")
    release.set_defaults(func=bind(cmd_release))
    releases = sub.add_parser(
        "releases", help="list complete releases: version, date, rows per dataset"
    )
    roots(releases)
    releases.set_defaults(func=bind(cmd_releases))
    verify = sub.add_parser(
        "verify", help="re-hash a release against its manifest and re-check the split proof"
    )
    roots(verify)
    verify.add_argument("version", nargs="?", help="default: the latest release")
    verify.set_defaults(func=bind(cmd_verify))
    pull = sub.add_parser("pull", help="copy a release to a folder and verify the copy")
    roots(pull)
    pull.add_argument("version")
    pull.add_argument("--to", required=True, help="destination folder")
    pull.set_defaults(func=bind(cmd_pull))
