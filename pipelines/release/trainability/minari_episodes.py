"""The Minari datasets of a release (exports/minari.py) checked against the release's own
`rl_steps` rows, read back with Minari itself (not trusted to the writer):

- every view has a dataset in every split of `rl_steps`, and every `rl_steps` row is in a view;
- each dataset loads (`MinariDataset` on its folder, as `minari.load_dataset` does) and holds,
  per episode, one observation more than actions and rewards, and the same steps as the rows of
  its view and split: per (`episode_id` of the episode's metadata, step index = `step`) the
  reward, `terminations` = `is_terminal` and `truncations` = `is_last` without `is_terminal`.

Memory holds one view's scalar columns and one dataset's episodes at a time."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.exports.minari import FOLDER, VIEWS, dataset_id
from pipelines.release.trainability.problems import EXAMPLES

RL_STEPS = "rl_steps"
_SCALARS = ("split", "source", "policy", "episode_id", "step", "reward", "is_terminal", "is_last")
_STEP = {
    "episode_id": pl.String,
    "step": pl.Int64,
    "reward": pl.Float64,
    "terminated": pl.Boolean,
    "truncated": pl.Boolean,
}


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def minari_steps(data: Path) -> tuple[pl.DataFrame, list[str]]:
    """A Minari dataset's steps as read by Minari (`data`: its `data` folder), and the episodes
    whose lengths do not fit Minari's shape (observations = actions + 1 = rewards + 1)."""
    from minari import MinariDataset

    rows: dict[str, list] = {name: [] for name in _STEP}
    misshapen = []
    dataset = MinariDataset(data)
    metadata = dataset.storage.get_episode_metadata(dataset.episode_indices)
    for episode, meta in zip(dataset.iterate_episodes(), metadata, strict=True):
        n = len(episode.rewards)
        episode_id = _text(meta.get("episode_id", ""))
        if len(episode.observations) != n + 1 or len(episode.actions) != n:
            misshapen.append(episode_id)
            continue
        rows["episode_id"] += [episode_id] * n
        rows["step"] += list(range(n))
        rows["reward"] += [float(r) for r in episode.rewards]
        rows["terminated"] += [bool(t) for t in episode.terminations]
        rows["truncated"] += [bool(t) for t in episode.truncations]
    return pl.DataFrame(rows, schema=_STEP), misshapen


def _expected(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.select(
        "episode_id",
        "step",
        pl.col("reward").fill_null(0.0),
        terminated=pl.col("is_terminal").fill_null(False),
        truncated=pl.col("is_last").fill_null(False) & ~pl.col("is_terminal").fill_null(False),
    )


def _differing(got: pl.DataFrame, want: pl.DataFrame) -> list[str]:
    """Episode ids whose steps differ between the two frames (either way, or in number)."""
    lengths = [f.group_by("episode_id").agg(n=pl.len()) for f in (got, want)]
    diff = pl.concat(
        [
            got.join(want, on=list(_STEP), how="anti").select("episode_id"),
            want.join(got, on=list(_STEP), how="anti").select("episode_id"),
            lengths[0].join(lengths[1], on=["episode_id", "n"], how="anti").select("episode_id"),
            lengths[1].join(lengths[0], on=["episode_id", "n"], how="anti").select("episode_id"),
        ]
    )
    return sorted(diff.get_column("episode_id").unique().to_list())


def _dataset_problems(datasets: Path, view: str, split: str, rows: pl.DataFrame) -> list[str]:
    name = dataset_id(view, split)
    data = datasets / name / "data"
    if not data.is_dir():
        return [f"minari: {name} is missing (every view has a dataset in every split)"]
    try:
        got, misshapen = minari_steps(data)
    # what h5py (OSError, KeyError) and Minari (ValueError, assertions) raise on a bad dataset
    except (OSError, KeyError, ValueError, TypeError, AssertionError) as err:
        return [f"minari: {name} does not load with Minari ({type(err).__name__}: {err})"]
    problems = []
    if misshapen:
        problems.append(
            f"minari: {name}: {len(misshapen)} episodes without one observation more than "
            f"actions, e.g. {misshapen[:EXAMPLES]}"
        )
    differing = _differing(got, _expected(rows.filter(pl.col("split") == split)))
    if differing:
        problems.append(
            f"minari: {name}: {len(differing)} episodes whose steps, rewards or end flags differ "
            f"from rl_steps, e.g. {differing[:EXAMPLES]}"
        )
    return problems


def minari_files(release: Path) -> list[Path]:
    """The files of the release folder's Minari datasets (what these checks read)."""
    return sorted(p for p in (release / FOLDER).rglob("*") if p.is_file())


def minari_problems(release: Path, datasets: Path | None = None) -> list[str]:
    """Every problem of the release folder's Minari datasets (none when it has no `minari/`: one
    written without `[release] minari`), or of those in `datasets` made from its rows (an export:
    `turnlake export minari`)."""
    datasets = release / FOLDER if datasets is None else datasets
    if not datasets.is_dir():
        return []
    files = sorted((release / RL_STEPS).glob("*.parquet"))
    if not files:
        return [f"minari: the release has Minari datasets but no {RL_STEPS} files"]
    steps = pl.concat([pl.scan_parquet(f).select(_SCALARS) for f in files]).collect()
    splits = {f.name.split("-", 1)[0].removesuffix(".parquet") for f in files}
    splits |= set(steps.get_column("split").unique().to_list())
    viewed = pl.any_horizontal([v.rows for v in VIEWS.values()])
    problems = []
    stray = steps.filter(~viewed)
    if stray.height:
        problems.append(f"minari: {stray.height} rl_steps rows are in no Minari view")
    for view, about in VIEWS.items():
        rows = steps.filter(about.rows)
        for split in sorted(splits):
            problems += _dataset_problems(datasets, view, split, rows)
    return problems
