"""`turnlake decision list|inspect`: decision time travel over the built tables."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from pipelines.cli.options import print_table, roots

F = Callable[..., Any]


class _Timestamp(click.ParamType):
    """An ISO 8601 date or time; without a zone it is UTC."""

    name = "TIME"

    def convert(self, value: Any, param: Any, ctx: Any) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            parsed = datetime.fromisoformat(str(value))
        except ValueError:
            self.fail(f"{value!r} is not an ISO 8601 date or time (e.g. 2025-03-04T09:00)")
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def filters(func: F) -> F:
    """The decision filters shared by `list` and `replay` (passed on as `DecisionFilter`)."""
    options = [
        click.option("--actor", help="Actor id or name (any case)."),
        click.option("--actor-type", help="human / ai, or the source's own actor type."),
        click.option("--session", help="Session id (or the episode id `decision:<session>`)."),
        click.option("--action", help="Chosen action, e.g. POSTED or SILENT."),
        click.option("--domain", help="Decision domain, e.g. chat."),
        click.option(
            "--rated/--unrated",
            default=None,
            help="Only decisions with (without) an outcome rating or verdict.",
        ),
        click.option("--since", type=_Timestamp(), help="Decided at or after (UTC if no zone)."),
        click.option("--until", type=_Timestamp(), help="Decided before (UTC if no zone)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def decision_filter(options: dict[str, Any]):
    from pipelines.decisions.filters import DecisionFilter

    return DecisionFilter(**{k: options.pop(k) for k in list(options) if k in _FILTER_KEYS})


_FILTER_KEYS = ("actor", "actor_type", "session", "action", "domain", "rated", "since", "until")


@click.group()
def decision() -> None:
    """Decision time travel: list, inspect, replay, rate, compare."""


@decision.command(name="list")
@roots
@filters
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def list_(raw_root: Path | None, data_root: Path | None, as_json: bool, **options: Any) -> int:
    """Decisions passing every filter given, oldest first."""
    from pipelines import api
    from pipelines.decisions.catalog import LIST_COLUMNS

    found = api.list_decisions(
        decision_filter(options), raw_root=raw_root, data_root=data_root
    ).select(LIST_COLUMNS)
    if as_json:
        for line in found.write_ndjson().splitlines():
            click.echo(line)
        return 0
    print_table(f"{found.height} decisions", found)
    return 0


@decision.command()
@roots
@click.argument("decision_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="The whole view as one JSON object.")
def inspect(raw_root: Path | None, data_root: Path | None, decision_id: str, as_json: bool) -> int:
    """Decision ID in full: identity, history, ambient and coordination state, the decision, the
    companion suggestion, outcome, every feedback row, and the prompt the release holds."""
    from pipelines import api
    from pipelines.decisions.inspect import render_decision, to_json

    view = api.inspect_decision(decision_id, raw_root=raw_root, data_root=data_root)
    click.echo(to_json(view) if as_json else render_decision(view))
    return 0


@decision.command()
@roots
@filters
@click.option(
    "--persona",
    "persona_file",
    required=True,
    type=click.Path(path_type=Path),
    help="Persona: a .toml/.json file with system_prompt (and name, role, …) or a text file "
    "holding the system prompt.",
)
@click.option(
    "--to", "to", required=True, type=click.Path(path_type=Path), help="Folder to write into."
)
@click.option(
    "--model",
    default="gpt-4o-mini",
    show_default=True,
    help="Model named in each batch request's body (turnlake calls no model).",
)
def replay(
    raw_root: Path | None,
    data_root: Path | None,
    persona_file: Path,
    to: Path,
    model: str,
    **options: Any,
) -> int:
    """Write a replay set: the selected decisions' prompts with the persona's identity, as an
    OpenAI chat batch file (custom_id = decision id) and as Parquet."""
    from pipelines import api

    written = api.replay_decisions(
        persona_file,
        to,
        decision_filter(options),
        model=model,
        raw_root=raw_root,
        data_root=data_root,
    )
    click.echo(f"replay set for persona {written.persona!r}: {written.n_decisions} decisions")
    for path in written.files:
        click.echo(f"  {path}")
    return 0


@decision.command()
@roots
@click.argument("decision_id", metavar="ID")
@click.option("--rating", type=float, required=True, help="The rating, on --scale.")
@click.option(
    "--scale",
    type=click.Choice(["0-1", "1-5"]),
    default="1-5",
    show_default=True,
    help="Scale of the rating.",
)
@click.option(
    "--by",
    "rated_by",
    type=click.Choice(["user", "system", "community"]),
    default="user",
    show_default=True,
    help="Rater kind; a later rating by the same kind supersedes this one.",
)
@click.option("--reason", help="Why this rating (kept with the feedback row).")
def rate(
    raw_root: Path | None,
    data_root: Path | None,
    decision_id: str,
    rating: float,
    scale: str,
    rated_by: str,
    reason: str | None,
) -> int:
    """Append a rating of decision ID to <raw root>/ratings/ratings.jsonl; the next build
    ingests it as feedback."""
    from pipelines import api

    path = api.rate_decision(
        decision_id,
        rating,
        scale=scale,
        rated_by=rated_by,
        reason=reason,
        raw_root=raw_root,
        data_root=data_root,
    )
    click.echo(f"rated {decision_id}: {rating:g} on {scale} by {rated_by} → {path}")
    click.echo("run `turnlake build` to ingest it")
    return 0


@decision.command()
@roots
@click.option("--persona", help="Only this persona's replays.")
@click.option("--json", "as_json", is_flag=True, help="Both tables as one JSON object.")
def compare(
    raw_root: Path | None, data_root: Path | None, persona: str | None, as_json: bool
) -> int:
    """Per replayed decision the original action beside each persona's, and the agreement rate
    per persona and domain (also: `turnlake sql --saved replay_agreement`)."""
    import orjson

    from pipelines import api

    side_by_side, rates = api.compare_replays(persona, raw_root=raw_root, data_root=data_root)
    if as_json:
        tables = {"decisions": side_by_side.to_dicts(), "agreement": rates.to_dicts()}
        click.echo(orjson.dumps(tables, option=orjson.OPT_INDENT_2).decode())
        return 0
    print_table(f"{side_by_side.height} replayed decisions", side_by_side)
    print_table("agreement with the original action, per persona and domain", rates)
    return 0
