"""`turnlake` command line: build, demo, sql, dictionary, dev."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from pipelines.cli import privacy as privacy_commands
from pipelines.cli import release as release_commands
from pipelines.config.settings import Settings, SettingsError, settings_from_env
from pipelines.storage.layout import Layout


def _settings(args: argparse.Namespace) -> Settings:
    settings = settings_from_env()
    data_root = getattr(args, "data_root", None)
    raw_root = getattr(args, "raw_root", None)
    if data_root and not raw_root and "TURNLAKE_RAW_ROOT" not in os.environ:
        raw_root = str(Layout(Path(data_root)).raw)
    return settings.with_roots(raw_root, data_root)


def _export_roots(settings: Settings) -> None:
    # Dagster code (and `dg dev` started from here) reads the same roots.
    os.environ["TURNLAKE_RAW_ROOT"] = str(settings.raw_root)
    os.environ["TURNLAKE_DATA_ROOT"] = str(settings.data_root)


def _ensure_dagster_home(settings: Settings) -> Path:
    """Use the project's dagster.yaml (SQLite under .dagster/) when run from the project root."""
    if "DAGSTER_HOME" not in os.environ:
        home = (
            Path.cwd()
            if (Path.cwd() / "dagster.yaml").exists()
            else Layout(settings.data_root).dagster_home
        )
        home.mkdir(parents=True, exist_ok=True)
        os.environ["DAGSTER_HOME"] = str(home.resolve())
    return Path(os.environ["DAGSTER_HOME"])


def _print_table(title: str, frame: pl.DataFrame) -> None:
    print(f"\n{title}")
    if frame.height == 0:
        print("  (none)")
        return
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_width_chars=160,
        fmt_str_lengths=80,
    ):
        print(frame)


def cmd_demo(args: argparse.Namespace) -> int:
    from pipelines.demo import write_demo

    settings = _settings(args)
    write_demo(settings.raw_root, scale=args.scale, seed=args.seed)
    n = sum(1 for p in settings.raw_root.rglob("*") if p.is_file())
    print(
        f"demo data written under {settings.raw_root} ({n} files, scale {args.scale}, seed {args.seed})"
    )
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    import dagster as dg

    from pipelines.demo import is_empty, write_demo
    from pipelines.gold.params import load_params
    from pipelines.reports.summary import build_summary
    from pipelines.storage.lock import DataRootBusy, data_root_lock

    settings = _settings(args)
    load_params()  # a bad rewards.toml stops the build here, before anything runs
    if is_empty(settings.raw_root) and args.demo_if_empty:
        write_demo(settings.raw_root, scale=args.scale, seed=args.seed)
        print(f"raw root was empty: wrote demo data under {settings.raw_root}")
    elif not settings.raw_root.is_dir():
        print(
            f"raw root {settings.raw_root} does not exist: create it and add raw files, point "
            "--raw-root at them, or pass --demo-if-empty to generate demo data",
            file=sys.stderr,
        )
        return 2
    elif is_empty(settings.raw_root):
        print(
            f"raw root {settings.raw_root} holds no files: building empty tables "
            "(pass --demo-if-empty to generate demo data instead)"
        )
    home = _ensure_dagster_home(settings)
    print(
        f"building: raw root {settings.raw_root}, data root {settings.data_root}, Dagster home {home}"
    )

    from pipelines.checks.ledger import revalidation
    from pipelines.definitions import BUILD_JOB, build_definitions

    job = build_definitions(settings).resolve_job_def(BUILD_JOB)
    try:
        with (
            data_root_lock(settings.layout, wait=args.wait),
            dg.DagsterInstance.get() as instance,
            revalidation(args.revalidate),
        ):
            result = job.execute_in_process(
                instance=instance,
                raise_on_error=False,
                run_config={"loggers": {"console": {"config": {"log_level": args.log_level}}}},
            )
    except DataRootBusy as busy:
        print(f"turnlake build: {busy}", file=sys.stderr)
        return 3
    failed_checks = [
        e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION" and not e.event_specific_data.passed
    ]
    summary = build_summary(settings)
    _print_table("Rows per silver table", summary.table_rows)
    _print_table("Records per source (records read = bronze + quarantined)", summary.reconciliation)
    _print_table("Quarantined records by source and error kind", summary.quarantine)
    _print_table(
        "Pending tails (incomplete last records of active files, retried next run)", summary.pending
    )
    if any(summary.withheld.values()):
        counts = ", ".join(f"{table} {n}" for table, n in summary.withheld.items() if n)
        print(f"\nWithheld for opted-out subjects (consent/optouts.jsonl): {counts}")
    if summary.missing.height:
        _print_table(
            "Raw files that disappeared (rows kept; set [ingest] remove_deleted_files to drop)",
            summary.missing,
        )
    _print_unrecognised(summary.unrecognised, settings)
    for check in failed_checks:
        print(
            f"FAILED CHECK {check.asset_key.to_user_string()}:{check.check_name}", file=sys.stderr
        )
    print(
        f"\nrun {result.run_id}: {'succeeded' if result.success else 'FAILED'}; "
        f"warehouse: {Layout(settings.data_root).duckdb}"
    )
    if result.success:
        verified_in_run = any(
            e.event_type_value == "ASSET_CHECK_EVALUATION"
            and e.event_specific_data.check_name == "release_verifies"
            and e.event_specific_data.passed
            for e in result.all_events
        )
        _report_latest_release(settings, verified_in_run)
    return 0 if result.success and not failed_checks else 1


def _print_unrecognised(files: list[str], settings: Settings) -> None:
    from pipelines.reports.summary import unrecognised_lines

    if files:
        print(
            "\nRaw files no adapter reads (see the raw layouts in README.md; these were not ingested)"
        )
        for line in unrecognised_lines(files, settings.raw_root):
            print(f"  {line}")


def _report_latest_release(settings: Settings, verified_in_run: bool = False) -> None:
    """The latest release and how to load it; verified again unless this run's `release_verifies`
    check passed (it re-hashes the same files: 1.2 s for a release of 1 GB of raw logs). With no
    episode built, says there was nothing to release."""
    from pipelines.release.assemble import NOTHING_TO_RELEASE, nothing_to_release
    from pipelines.release.files import latest_release
    from pipelines.release.verify import verify_release
    from pipelines.storage.layout import Layout

    layout = Layout(settings.data_root)
    exports = layout.exports
    version = latest_release(exports)
    if nothing_to_release(layout):
        print(
            f"\n{NOTHING_TO_RELEASE}"
            + (f"; the latest release {version} is from an earlier build" if version else "")
        )
        return
    if version is None:
        return
    if verified_in_run:
        print(f"latest release {version}: verified (release_verifies, this run)")
    else:
        problems = verify_release(exports / version)
        print(
            f"latest release {version}: {'verified' if not problems else f'{len(problems)} PROBLEMS'}"
        )
    release_commands.print_load_hint(exports / version)


def cmd_sql(args: argparse.Namespace) -> int:
    import duckdb

    from pipelines.storage.layout import Layout
    from pipelines.warehouse.queries import saved_queries
    from pipelines.warehouse.views import query

    saved = saved_queries()
    if args.list:
        for name, item in saved.items():
            print(f"{name:<36} {item.description}")
        return 0
    if (args.query is None) == (args.saved is None):
        print("give either a SQL query or --saved NAME (see --list)", file=sys.stderr)
        return 2
    if args.saved is not None and args.saved not in saved:
        print(f"no saved query {args.saved!r}; known: {', '.join(saved)}", file=sys.stderr)
        return 2
    sql = saved[args.saved].sql if args.saved is not None else args.query
    settings = _settings(args)
    layout = Layout(settings.data_root)
    if not layout.duckdb.exists():
        print(f"no warehouse at {layout.duckdb}: run `turnlake build` first", file=sys.stderr)
        return 2
    try:
        frame = query(layout, sql)
    except duckdb.Error as err:
        print(f"SQL error: {err}", file=sys.stderr)
        return 1
    _print_table(f"{frame.height} rows", frame)
    return 0


def cmd_dictionary(args: argparse.Namespace) -> int:
    from pipelines.reports.dictionary import DICTIONARY_PATH, render_dictionary, write_dictionary

    if args.check:
        current = DICTIONARY_PATH.read_text(encoding="utf-8") if DICTIONARY_PATH.exists() else ""
        if current != render_dictionary():
            print(f"{DICTIONARY_PATH} is stale: run `turnlake dictionary`", file=sys.stderr)
            return 1
        print(f"{DICTIONARY_PATH} is up to date")
        return 0
    print(f"wrote {write_dictionary()}")
    return 0


def _last_run_line(home: Path) -> str:
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs(limit=1)
        if not runs:
            return f"no runs recorded in the Dagster instance at {home}"
        run = runs[0]
        record = instance.get_run_record_by_id(run.run_id)
        started = record.start_time and datetime.fromtimestamp(record.start_time, UTC).isoformat(
            timespec="seconds"
        )
        ended = record.end_time and datetime.fromtimestamp(record.end_time, UTC).isoformat(
            timespec="seconds"
        )
        return f"last run {run.run_id} ({run.job_name}): {run.status.value}, started {started}, ended {ended}"


def cmd_status(args: argparse.Namespace) -> int:
    from pipelines.checks.health import published_problems
    from pipelines.reports.status import raw_status
    from pipelines.reports.summary import build_summary
    from pipelines.storage.layout import Layout

    settings = _settings(args)
    home = _ensure_dagster_home(settings)
    print(_last_run_line(home))
    status = raw_status(settings)
    summary = build_summary(settings)
    _print_table("Raw files changed since the last build", status.changes)
    _print_table("Pending tails", status.pending)
    _print_table("Quarantined records by source and error kind", summary.quarantine)
    _print_table("Freshness per source", status.freshness)
    _print_unrecognised(status.unrecognised, settings)
    problems = published_problems(Layout(settings.data_root))
    for problem in problems:
        print(f"PROBLEM {problem}", file=sys.stderr)
    print(
        "\npublished tables and views: " + ("OK" if not problems else f"{len(problems)} problems")
    )
    return 0 if not problems else 1


def cmd_dev(args: argparse.Namespace) -> int:
    settings = _settings(args)
    _export_roots(settings)
    _ensure_dagster_home(settings)
    os.execvp("dg", ["dg", "dev", *args.extra])
    return 0  # unreachable


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="turnlake", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def roots(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--raw-root", help="landing root of raw files (default data/raw, env TURNLAKE_RAW_ROOT)"
        )
        p.add_argument(
            "--data-root",
            help="root of warehouse and exports (default data, env TURNLAKE_DATA_ROOT)",
        )

    build = sub.add_parser("build", help="materialize the whole asset graph through Dagster")
    roots(build)
    build.add_argument(
        "--demo-if-empty",
        action="store_true",
        help="write demo data first when the raw root is empty",
    )
    build.add_argument(
        "--scale", type=int, default=1, help="demo scale when generating (default 1)"
    )
    build.add_argument("--seed", type=int, default=7, help="demo seed when generating (default 7)")
    build.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    build.add_argument(
        "--revalidate",
        action="store_true",
        help="re-run every check on its data, ignoring checks passed before on the same "
        "inputs (env TURNLAKE_REVALIDATE=1)",
    )
    build.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="if another build holds the data root, wait this long before giving up (exit 3)",
    )
    build.set_defaults(func=cmd_build)

    demo = sub.add_parser("demo", help="write realistic demo raw files of all five sources")
    roots(demo)
    demo.add_argument("--scale", type=int, default=1)
    demo.add_argument("--seed", type=int, default=7)
    demo.set_defaults(func=cmd_demo)

    sql = sub.add_parser("sql", help="run SQL against the DuckDB views and print the result")
    roots(sql)
    sql.add_argument("query", nargs="?", help="SQL to run (or use --saved NAME)")
    sql.add_argument(
        "--saved", metavar="NAME", help="run a saved research query (pipelines/queries/NAME.sql)"
    )
    sql.add_argument("--list", action="store_true", help="list the saved queries")
    sql.set_defaults(func=cmd_sql)

    release_commands.register(sub, roots, _settings)
    privacy_commands.register(sub, roots, _settings)

    status = sub.add_parser(
        "status", help="last run, raw changes since, pending tails, quarantine, freshness"
    )
    roots(status)
    status.set_defaults(func=cmd_status)

    dictionary = sub.add_parser(
        "dictionary", help="regenerate docs/data_dictionary.md from the models"
    )
    dictionary.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    dictionary.set_defaults(func=cmd_dictionary)

    dev = sub.add_parser("dev", help="start `dg dev` on this project's instance and roots")
    roots(dev)
    dev.set_defaults(func=cmd_dev)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "dev":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra  # `turnlake dev --port 3001` passes --port through to `dg dev`
    try:
        return args.func(args)
    except SettingsError as err:
        print(f"turnlake {args.command}: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
