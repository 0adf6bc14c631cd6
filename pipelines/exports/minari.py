"""The `rl_steps` episodes as Minari datasets (offline RL): `minari.load_dataset(id)` with
`MINARI_DATASETS_PATH=<release>/minari` loads them.

One Minari dataset per view and split, id `turnlake/<view>/<split>-v0`; the views are the
behaviour policies of `rl_steps` (VIEWS): the study's IQL sessions, the decision source's
actors, the Social RL agents' messages, and the coach-level Social RL view
(exports/datasets/coach_steps.py).
Every view has a dataset in every split of `rl_steps`, with 0 episodes where it has none, so a
training script finds the same ids in every release.

How a release row becomes a Minari step (Minari episodes hold one observation more than actions):

- `observations`: the rows' `observation` texts in step order, then the empty string: the
  observation after the last action is in no log (the reply to the study's last operator message,
  the next round of a run), so it is "" — a terminal step's next observation is never bootstrapped
  from; after a truncated last step it stands for "not observed".
- `actions`, `rewards`: the rows' `action` and `reward`.
- `terminations`: the rows' `is_terminal`; `truncations`: `is_last` without `is_terminal` (an
  episode that ended without its outcome: max turns, a decision session, a Social RL run).
- episode metadata `episode_id` (`dataset.storage.get_episode_metadata([episode.id])`): the
  release rows' `episode_id`; Minari step i is the row of `step` i (an episode's steps are
  0..n-1, a trainability check). Not per-step `infos`: Minari's HDF5 writer stores each episode
  as a group of chunked datasets, ~2 KB each plus a 4 KB heap block per text dataset, and infos
  of an id and a step added 6 KB to every episode (19 KB instead of 13 KB, measured).

Observations and actions are gymnasium `Text` spaces, one per view (the same in every split, so a
view's datasets can be combined with `minari.combine_datasets`): `min_length` 0 (the final
observation), `max_length` the view's longest text, `charset` every character its texts hold.
Minari's default storage, HDF5, is used: one file per dataset whatever its episode count, written
with Minari's own writer (`create_dataset_from_buffers`, `EpisodeBuffer`). Its Arrow storage is
not: a folder and two files per episode, half the bytes but a write that grows with the square
of the episodes in Minari 0.5.4 (measured: docs/reference/release.md, "Minari datasets").
HDF5 strings cannot hold a NUL character: a NUL in a text is written as U+FFFD, and the texts
changed are counted.

A view is read from the release's `rl_steps` Parquet files with its rows filtered at the scan, so
memory holds one view's rows, never the release's; no gymnasium environment is involved.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from pipelines.config.extras import minari_missing
from pipelines.exports.datasets.coach_steps import COACH
from pipelines.runtime.workers import exit_with_parent

if TYPE_CHECKING:
    import gymnasium as gym
    from minari.data_collector import EpisodeBuffer

# The version of what a Minari dataset holds, recorded in every release's config (so in its
# content hash): bump it with any change to how rows become episodes.
FORMAT_VERSION = 1
FOLDER = "minari"  # in the release: MINARI_DATASETS_PATH
NAMESPACE = "turnlake"
DATASET_VERSION = 0
ENV_VAR = "MINARI_DATASETS_PATH"
FINAL_OBSERVATION = ""  # the observation after the last action: not in any log
NUL, NUL_STANDIN = "\x00", "\ufffd"
COLUMNS = ("split", "episode_id", "step", "observation", "action", "reward", "is_last")
COLUMNS += ("is_terminal",)
EPISODES_AT_ONCE = 256  # episodes whose texts Python holds at a time while writing
TEXTS_AT_ONCE = 1024  # texts joined at a time to find a view's characters


@dataclass(frozen=True)
class View:
    """One behaviour policy of `rl_steps`: its rows and what its episodes are."""

    rows: pl.Expr
    policy: str  # Minari's `algorithm_name`
    about: str


_SOCIAL = pl.col("source") == "social_rl"
_COACH = pl.col("policy").fill_null("") == COACH
VIEWS: dict[str, View] = {
    "study": View(
        pl.col("source") == "study",
        "IQL operator policy (persuasion study)",
        "Study sessions: an operator reply chosen by the IQL policy per step, observed through "
        "the conversation so far (JSON messages).",
    ),
    "decision": View(
        pl.col("source") == "decision",
        "human and AI decision makers",
        "Decision sessions, one episode per actor: the full context JSON, then the action.",
    ),
    "social_rl": View(
        _SOCIAL & ~_COACH,
        "Social RL agents",
        "Social RL runs, one episode per agent: the round transcript the agent saw, then its "
        "message.",
    ),
    "social_rl_coach": View(
        _SOCIAL & _COACH,
        "Social RL coach",
        "The coach-level Social RL view: per round, an agent's feedback vector, then the policy "
        "adaptation the coach applied to it (or `none`).",
    ),
}


def dataset_id(view: str, split: str) -> str:
    """`turnlake/<view>/<split>-v0`: the id `minari.load_dataset` takes."""
    return f"{NAMESPACE}/{view}/{split}-v{DATASET_VERSION}"


def _start_writer(folder: str) -> None:
    """Minari finds datasets (and namespaces) under `$MINARI_DATASETS_PATH` only: set once, in the
    writer's own process before it starts any thread, never in the build's process, where other
    threads may read the environment while it changes (setenv is not thread-safe). Then the writer
    exits with the build, as the parse workers do, rather than write on after a killed one."""
    os.environ[ENV_VAR] = folder
    exit_with_parent()


def _without_nul(column: str) -> tuple[pl.Expr, pl.Expr]:
    """The text with NUL written as U+FFFD (HDF5 strings end at a NUL), and whether it held one."""
    text = pl.col(column).fill_null("")
    return text.str.replace_all(NUL, NUL_STANDIN, literal=True), text.str.contains(
        NUL, literal=True
    )


def view_rows(files: list[Path], view: View) -> pl.DataFrame:
    """A view's rows of `rl_steps` (every split), its texts HDF5-safe, with `_nul` (the texts of
    the row that held a NUL), by split, then episode in release order (the files by name, their
    rows as written: an episode whose steps are in two files comes where its first step does),
    then step. Each split is one run of rows (`split_rows`) and each episode one run of steps."""
    if not files:
        return pl.DataFrame(schema=_ROW_SCHEMA)
    observation, obs_nul = _without_nul("observation")
    action, act_nul = _without_nul("action")
    scans = [pl.scan_parquet(f).filter(view.rows).select(COLUMNS) for f in sorted(files)]
    return (
        pl.concat(scans)
        .with_columns(observation, action, _nul=obs_nul.cast(pl.Int64) + act_nul.cast(pl.Int64))
        .with_row_index("_row")
        .with_columns(_first=pl.col("_row").min().over("split", "episode_id"))
        .sort("split", "_first", "step")
        .drop("_row", "_first")
        .collect()
    )


def split_rows(rows: pl.DataFrame, split: str) -> pl.DataFrame:
    """One split's rows of `view_rows` (sorted by split): a slice, not a copy of the texts."""
    column = rows.get_column("split")
    start = column.search_sorted(split, side="left")
    return rows.slice(start, column.search_sorted(split, side="right") - start)


_ROW_SCHEMA = {
    "split": pl.String,
    "episode_id": pl.String,
    "step": pl.Int64,
    "observation": pl.String,
    "action": pl.String,
    "reward": pl.Float64,
    "is_last": pl.Boolean,
    "is_terminal": pl.Boolean,
    "_nul": pl.Int64,
}


def _characters(texts: pl.Series) -> str:
    """Every character of the texts, sorted: counted over their UTF-32 code points in numpy (a
    Python set over every character is ~10x slower on a large view), TEXTS_AT_ONCE texts at a
    time (the UTF-32 copy is 4 bytes a character)."""
    seen = np.zeros(0, dtype=bool)
    for start in range(0, texts.len(), TEXTS_AT_ONCE):
        joined = texts.slice(start, TEXTS_AT_ONCE).str.join("").item()
        counts = np.bincount(np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32))
        if counts.size > seen.size:
            seen = np.pad(seen, (0, counts.size - seen.size))
        seen[: counts.size] |= counts > 0
    return "".join(chr(c) for c in np.flatnonzero(seen))


def text_space(texts: pl.Series) -> gym.spaces.Text:
    """A `Text` space that fits the texts (and the empty final observation)."""
    from gymnasium.spaces import Text

    longest = texts.str.len_chars().max() if texts.len() else 0
    return Text(max_length=max(int(longest or 0), 1), min_length=0, charset=_characters(texts))


def _episode_bounds(rows: pl.DataFrame) -> list[tuple[int, int]]:
    """(first row, row after the last) of each run of one episode id."""
    if rows.is_empty():
        return []
    ids = rows.get_column("episode_id")
    starts = ids.ne_missing(ids.shift(1)).arg_true().to_list()
    return list(zip(starts, [*starts[1:], rows.height], strict=True))


def episode_buffers(rows: pl.DataFrame) -> Iterator[EpisodeBuffer]:
    """One split of a view's rows (`split_rows`: each episode a run of steps in step order) as
    Minari episodes, in that order (see the module doc for how a row becomes a step). Python
    holds the texts of EPISODES_AT_ONCE episodes at a time, not of the split."""
    bounds = _episode_bounds(rows)
    for at in range(0, len(bounds), EPISODES_AT_ONCE):
        batch = bounds[at : at + EPISODES_AT_ONCE]
        yield from _buffers(rows.slice(batch[0][0], batch[-1][1] - batch[0][0]), batch)


def _buffers(rows: pl.DataFrame, bounds: list[tuple[int, int]]) -> Iterator[EpisodeBuffer]:
    from minari.data_collector import EpisodeBuffer

    offset = bounds[0][0]
    observations = rows.get_column("observation").to_list()
    actions = rows.get_column("action").to_list()
    rewards = rows.get_column("reward").fill_null(0.0).to_list()
    terminal = rows.get_column("is_terminal").fill_null(False).to_list()
    last = rows.get_column("is_last").fill_null(False).to_list()
    for first, after in bounds:
        start, end = first - offset, after - offset
        yield EpisodeBuffer(
            observations=[*observations[start:end], FINAL_OBSERVATION],
            actions=actions[start:end],
            rewards=rewards[start:end],
            terminations=terminal[start:end],
            truncations=[d and not t for d, t in zip(last[start:end], terminal[start:end])],
        )


def _create(
    view: str, split: str, rows: pl.DataFrame, spaces: tuple, release: str
) -> dict[str, int]:
    """One Minari dataset written by Minari (under `$MINARI_DATASETS_PATH`); its counts."""
    import minari

    about = VIEWS[view]
    with warnings.catch_warnings():
        # no gymnasium environment made these episodes: Minari warns that none is given
        warnings.filterwarnings("ignore", message=".*(env_spec|eval_env|author_email|code_perm)")
        dataset = minari.create_dataset_from_buffers(
            dataset_id(view, split),
            episode_buffers(rows),  # consumed one episode at a time by the storage
            observation_space=spaces[0],
            action_space=spaces[1],
            algorithm_name=about.policy,
            author="turnlake",
            description=f"{about.about} Split {split} of turnlake release {release} (rl_steps "
            "rows; each episode's metadata names its episode_id; the observation after the last "
            "action is the empty string).",
        )
    starts = [first for first, _ in _episode_bounds(rows)]
    ids = rows.get_column("episode_id").gather(starts).to_list()
    # the rows' episode ids, in the order the episodes were written (one file open for all)
    dataset.storage.update_episode_metadata([{"episode_id": i} for i in ids], range(len(ids)))
    return {
        "episodes": len(ids),
        "steps": rows.height,
        "texts_with_nul": int(rows.get_column("_nul").sum() or 0),
    }


def write_minari(folder: Path, files: list[Path], splits: list[str], release: str) -> dict:
    """Every view's dataset in every split of `splits` under `folder` (a new folder: the release's
    `minari/`), from the `rl_steps` Parquet `files`; the manifest's `minari` section: per dataset
    id its view, split, episodes, steps and texts whose NUL was replaced. Written by Minari in a
    process of its own, whose `MINARI_DATASETS_PATH` is `folder` (`_start_writer`)."""
    if problem := minari_missing():  # e.g. `forget` rewriting a release made where it was
        raise ImportError(problem)
    folder.mkdir(parents=True)
    with ProcessPoolExecutor(
        1,
        mp_context=multiprocessing.get_context("spawn"),  # a fresh process: no threads yet
        initializer=_start_writer,
        initargs=(str(folder),),
    ) as writer:
        datasets = writer.submit(_write_views, files, splits, release).result()
    return {"format": FORMAT_VERSION, "path": FOLDER, "datasets": datasets}


def _write_views(files: list[Path], splits: list[str], release: str) -> dict[str, dict]:
    """In the writer's process: the namespace, then every view's dataset in every split."""
    from minari.namespace import create_namespace

    create_namespace(
        NAMESPACE, description=f"turnlake release {release}: rl_steps as Minari datasets"
    )
    datasets: dict[str, dict] = {}
    for view, about in VIEWS.items():
        rows = view_rows(files, about)
        spaces = (text_space(rows["observation"]), text_space(rows["action"]))
        for split in splits:
            part = split_rows(rows, split)
            counts = _create(view, split, part, spaces, release)
            datasets[dataset_id(view, split)] = {"view": view, "split": split, **counts}
    return datasets
