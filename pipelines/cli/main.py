"""`turnlake`: the command line, a thin shell over the Python API (`pipelines.api`).

Each command parses its options, calls the API and prints the result; `main` turns the API's
errors into the exit codes listed in `turnlake --help`.
"""

from __future__ import annotations

import sys

import click

from pipelines.cli import (
    build,
    decision,
    diff,
    export,
    privacy,
    project,
    release,
    report,
    shell,
    warehouse,
)
from pipelines.cli.options import error, show_progress

EXIT_CODES = """\b
Exit codes:
  0  done
  1  a blocking check failed, the build failed, a release does not verify or was refused,
     an SQL error, published tables unhealthy (status), a stale dictionary (dictionary --check),
     a release store (S3) that refused or could not be reached
  2  bad settings (turnlake.toml, rewards.toml, no usable pseudonym key), bad usage (also a
     store that is neither a folder nor s3://), or something named that does not exist: raw
     root, built tables, warehouse, release, saved query, a pull target that exists
  3  the data root is busy: another build holds it (see --wait), or forget found partition
     runs pending; or another publisher moved a release store's LATEST while this one
     published (publish again)

\b
Roots: --raw-root / --data-root, or TURNLAKE_RAW_ROOT / TURNLAKE_DATA_ROOT (defaults data/raw
and data); settings: turnlake.toml or the file named by TURNLAKE_CONFIG."""


CONTEXT = {"help_option_names": ["-h", "--help"]}


@click.group(epilog=EXIT_CODES, context_settings=CONTEXT)
def cli() -> None:
    """turnlake: raw human–AI interaction logs → validated tables and versioned training sets."""
    show_progress()


for command in (
    build.build,
    build.demo,
    warehouse.sql,
    warehouse.status,
    shell.shell,
    release.release,
    release.releases,
    release.verify,
    release.pull,
    export.export,
    diff.diff,
    privacy.subject,
    privacy.forget,
    project.dictionary,
    project.dev,
    report.report,
    decision.decision,
):
    cli.add_command(command)


def exit_code(err: Exception) -> int | None:
    """The exit code for an error the API raised on purpose; None for a bug (re-raised)."""
    from pipelines import api

    if isinstance(err, api.DataRootBusy | api.PublishConflict):
        return 3
    if isinstance(
        err,
        api.SettingsError
        | api.RawRootMissing
        | api.NotBuilt
        | api.NoRelease
        | api.UnknownQuery
        | api.UnknownDecision
        | api.BadPersonaFile
        | api.BadRatingValue
        | api.TargetExists
        | api.MissingExtra
        | api.BadRoot,
    ):
        return 2
    if isinstance(err, api.TurnlakeError):
        return 1
    return None


def main(argv: list[str] | None = None) -> int:
    """Run `turnlake` with `argv` (default: the process's arguments); returns the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        return cli.main(args=args, prog_name="turnlake", standalone_mode=False) or 0
    except click.ClickException as err:  # bad usage: click's message, exit 2
        err.show()
        return err.exit_code
    except click.Abort:
        error("Aborted!")
        return 1
    except Exception as err:
        code = exit_code(err)
        if code is None:
            raise
        command = next((arg for arg in args if not arg.startswith("-")), "")
        error(f"turnlake {command}: {err}")
        return code


if __name__ == "__main__":
    sys.exit(main())
