"""Every row about a subject: one footprint, shared by opt-out withholding, `subject show` and
`forget`.

A subject is `(kind, id)` with kind as in the opt-out registry (`SUBJECT_KINDS`). How a kind maps
onto silver (docs/data_dictionary.md):

- `participant`: a study participant id. Whole study episodes whose `group_id` is the id (or
  whose
  session id `native_id` starts with `<id>_`), plus everything the id did as an actor (below): in
  study turns a resident's `actor_id` is the participant id.
- `actor`: an `actor_id` of turns / decisions, an `agent_id` of agent rounds, or the rater of a
  feedback row (`user_id` in its attributes). Their turns, decisions, agent rounds and ratings,
  and whole episodes where they are the human subject: a study session of theirs (`group_id` =
  id) or an episode whose human speakers / deciders (`role = user` turns, `actor_type = human`
  decisions) are all this one actor.
- `scenario`: the scenario episode whose `native_id` is the id (scenario source).
- `conversation`: a dialogue episode by `native_id` `<dataset>/<conversation_id>` or by the bare
  `conversation_id` (every dataset), a study session id, or a decision session id.

Everything hanging off a withheld row goes with it: turns, decisions and agent rounds of a whole
episode; decisions carried out by a withheld turn; feedback on any withheld episode, turn,
decision or agent round; contexts referenced only by withheld decisions; gold rows keyed by any
of these (`feedback_ids` included); a `splits` row whose every episode is withheld; quarantine
rows whose file or raw copy mentions a participant, actor or scenario id or a withheld episode's
native id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

SUBJECT_KINDS: tuple[str, ...] = ("participant", "actor", "scenario", "conversation")
_PAIR_SEP = "\x00"


def feedback_rater() -> pl.Expr:
    """Id of the human who gave a feedback row (`user_id` in its attributes, e.g. a dialogue event's
    unmapped `extra.user_id`); null when the source records none."""
    attrs = pl.col("attributes")
    return pl.coalesce(
        attrs.str.json_path_match("$.user_id"), attrs.str.json_path_match("$.extra.user_id")
    )


@dataclass
class Footprint:
    """Ids of every row about a set of subjects (whole episodes plus single rows elsewhere)."""

    episodes: set[str] = field(default_factory=set)
    turns: set[str] = field(default_factory=set)
    decisions: set[str] = field(default_factory=set)
    feedback: set[str] = field(default_factory=set)
    agent_rounds: set[str] = field(default_factory=set)  # "<episode_id>\0<agent_id>"
    contexts: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    participants: set[str] = field(default_factory=set)
    text_ids: set[str] = field(default_factory=set)  # searched in quarantine file / raw

    def is_empty(self) -> bool:
        return not (
            self.episodes or self.turns or self.decisions or self.feedback or self.agent_rounds
        )


def _ids(subjects: pl.DataFrame, kind: str) -> list[str]:
    return (
        subjects.filter(pl.col("subject_kind") == kind).get_column("subject_id").unique().to_list()
    )


def _col(frame: pl.DataFrame | None, name: str) -> bool:
    return frame is not None and name in frame.columns and not frame.is_empty()


def subject_footprint(tables: dict[str, pl.DataFrame], subjects: pl.DataFrame) -> Footprint:
    """Footprint of every subject in `subjects` (columns `subject_kind`, `subject_id`) over the
    silver tables present in `tables` (keys `episodes`, `turns`, `decisions`, `feedback`,
    `agent_rounds`, `contexts`; missing tables are skipped)."""
    fp = Footprint()
    if subjects.is_empty():
        return fp
    t = {name.rsplit(".", 1)[-1]: frame for name, frame in tables.items()}
    participants = _ids(subjects, "participant")
    actors = sorted(set(_ids(subjects, "actor")) | set(participants))
    scenarios = _ids(subjects, "scenario")
    conversations = _ids(subjects, "conversation")
    fp.participants = set(participants)
    fp.text_ids = set(actors) | set(scenarios)
    episodes = t.get("episodes")
    if _col(episodes, "episode_id"):
        named = _names_a_subject(actors, scenarios, conversations)
        fp.episodes |= set(episodes.filter(named).get_column("episode_id").to_list())
        fp.episodes |= _human_subject_episodes(t.get("turns"), t.get("decisions"), actors)
        fp.text_ids |= set(
            episodes.filter(_in("episode_id", list(fp.episodes))).get_column("native_id").to_list()
        )
        eps = list(fp.episodes)
        in_group = episodes.group_by("group_id").agg(_in("episode_id", eps).all().alias("all_out"))
        fp.groups = set(in_group.filter("all_out").get_column("group_id").to_list())
    _add_rows(fp, t, actors)
    return fp


def _names_a_subject(actors: list[str], scenarios: list[str], conversations: list[str]) -> pl.Expr:
    """An episode that is wholly about a subject by its ids (see the module docstring)."""
    src, native = pl.col("source"), pl.col("native_id")
    return (
        (
            (src == "study")
            & (_in("group_id", actors) | native.str.extract(r"^([^_]+)_", 1).is_in(_strs(actors)))
        )
        | ((src == "scenario") & native.is_in(_strs(scenarios)))
        | (
            (src == "dialogue")
            & (
                native.is_in(_strs(conversations))
                | native.str.extract(r"/(.*)$", 1).is_in(_strs(conversations))
            )
        )
        | (src.is_in(_strs(["study", "decision"])) & native.is_in(_strs(conversations)))
    )


def _add_rows(fp: Footprint, t: dict[str, pl.DataFrame], actors: list[str]) -> None:
    """The single rows about the subjects or hanging off `fp.episodes`, table by table (each
    table's rows may hang off those found in the tables before it)."""
    turns, decisions = t.get("turns"), t.get("decisions")
    feedback, agent_rounds, contexts = t.get("feedback"), t.get("agent_rounds"), t.get("contexts")
    eps = list(fp.episodes)
    if _col(turns, "turn_id"):
        mask = _in("episode_id", eps) | _in("actor_id", actors)
        fp.turns = set(turns.filter(mask).get_column("turn_id").to_list())
    if _col(decisions, "decision_id"):
        mask = _in("episode_id", eps) | _in("actor_id", actors) | _in("turn_id", list(fp.turns))
        fp.decisions = set(decisions.filter(mask).get_column("decision_id").to_list())
    if _col(agent_rounds, "agent_id"):
        mask = _in("episode_id", eps) | _in("agent_id", actors)
        fp.agent_rounds = set(agent_rounds.filter(mask).select(_pair()).to_series().to_list())
    if _col(feedback, "feedback_id"):
        mask = (
            _in("episode_id", eps)
            | _in("turn_id", list(fp.turns))
            | _in("decision_id", list(fp.decisions))
            | _pair().is_in(_strs(fp.agent_rounds))
            | feedback_rater().is_in(_strs(actors))
        )
        fp.feedback = set(
            feedback.filter(mask.fill_null(False)).get_column("feedback_id").to_list()
        )
    if _col(decisions, "context_hash") and contexts is not None:
        refs = decisions.filter(pl.col("context_hash").is_not_null())
        gone = refs.filter(_in("decision_id", list(fp.decisions))).get_column("context_hash")
        kept = refs.filter(~_in("decision_id", list(fp.decisions))).get_column("context_hash")
        fp.contexts = set(gone.to_list()) - set(kept.to_list())


def _strs(values) -> pl.Series:
    return pl.Series(list(values), dtype=pl.String)


def _in(column: str, values) -> pl.Expr:
    """`column` is one of `values` (an empty collection matches nothing)."""
    return pl.col(column).is_in(_strs(values))


def _pair() -> pl.Expr:
    return pl.concat_str([pl.col("episode_id"), pl.col("agent_id")], separator=_PAIR_SEP)


def _human_subject_episodes(
    turns: pl.DataFrame | None, decisions: pl.DataFrame | None, actors: list[str]
) -> set[str]:
    """Episodes whose human speakers and deciders are all one of `actors` (and there is one)."""
    if not actors:
        return set()
    parts = []
    if _col(turns, "actor_id"):
        parts.append(
            turns.filter((pl.col("role") == "user") & pl.col("actor_id").is_not_null()).select(
                "episode_id", "actor_id"
            )
        )
    if _col(decisions, "actor_type"):
        parts.append(
            decisions.filter(
                (pl.col("actor_type") == "human") & pl.col("actor_id").is_not_null()
            ).select("episode_id", "actor_id")
        )
    if not parts:
        return set()
    humans = (
        pl.concat(parts)
        .unique()
        .group_by("episode_id")
        .agg(pl.col("actor_id").n_unique().alias("n"), pl.col("actor_id").first())
    )
    hit = humans.filter((pl.col("n") == 1) & _in("actor_id", actors))
    return set(hit.get_column("episode_id").to_list())


def rows_mask(name: str, frame: pl.DataFrame, fp: Footprint) -> pl.Expr:
    """Boolean expression: the rows of table `name` (silver or gold, `gold.` prefix allowed) that
    are about the footprint's subjects, judged by which key columns the table has."""
    base = name.rsplit(".", 1)[-1]
    cols = set(frame.columns)
    mask = pl.lit(False)
    if "episode_id" in cols:
        mask = mask | _in("episode_id", list(fp.episodes))
    if "turn_id" in cols:
        mask = mask | _in("turn_id", list(fp.turns))
    if "decision_id" in cols:
        mask = mask | _in("decision_id", list(fp.decisions))
    if "feedback_id" in cols:
        mask = mask | _in("feedback_id", list(fp.feedback))
    if {"episode_id", "agent_id"} <= cols:
        mask = mask | _pair().is_in(_strs(fp.agent_rounds))
    if "target_id" in cols:
        targets = (
            fp.turns
            | fp.decisions
            | fp.episodes
            | {p.replace(_PAIR_SEP, "/") for p in fp.agent_rounds}
        )
        mask = mask | _in("target_id", list(targets))
    if "feedback_ids" in cols and fp.feedback:
        mask = (
            mask
            | pl.col("feedback_ids").list.eval(pl.element().is_in(_strs(fp.feedback))).list.any()
        )
    if "participant_id" in cols:
        mask = mask | _in("participant_id", list(fp.participants))
    if base == "contexts" and "context_hash" in cols:
        mask = mask | _in("context_hash", list(fp.contexts))
    if base == "splits" and "group_id" in cols:
        mask = mask | _in("group_id", list(fp.groups))
    if base == "quarantine" and fp.text_ids:
        pattern = _text_pattern(fp.text_ids)
        for col in ("file", "raw", "locator"):
            if col in cols:
                mask = mask | pl.col(col).str.contains(pattern)
    return mask.fill_null(False)


def _text_pattern(ids: set[str]) -> str:
    """Rust-regex alternation of ids not glued to a further letter or digit."""
    alternation = "|".join(re.escape(i) for i in sorted(ids, key=lambda i: (-len(i), i)) if i)
    return rf"(?:^|[^A-Za-z0-9])(?:{alternation})(?:$|[^A-Za-z0-9])"


def subject_rows(
    tables: dict[str, pl.DataFrame], kind: str, subject_id: str
) -> dict[str, pl.DataFrame]:
    """Every row about one subject, per table of `tables` (silver and gold together; a key may carry
    a layer prefix such as `gold.turn_rewards`). Tables without such rows map to empty frames."""
    if kind not in SUBJECT_KINDS:
        raise ValueError(f"unknown subject kind {kind!r}; one of {', '.join(SUBJECT_KINDS)}")
    subjects = pl.DataFrame({"subject_kind": [kind], "subject_id": [str(subject_id)]})
    fp = subject_footprint(tables, subjects)
    return {name: frame.filter(rows_mask(name, frame, fp)) for name, frame in tables.items()}
