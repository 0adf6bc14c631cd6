"""The Minari datasets on the release's card (store/minari_files.py): how to load them, which ids
there are, how a release row became a Minari step. No counts: `forget` rewrites the datasets, and
their episodes and steps are in the manifest's `minari` section."""

from __future__ import annotations

from pipelines.exports.minari import FINAL_OBSERVATION, VIEWS
from pipelines.release.card.columns import MINARI_FIELDS


def minari_section(section: dict | None) -> str:
    """The release card's section on the Minari datasets (`section`: the manifest's)."""
    if not section:
        return (
            "Not in this release (`[release] minari = false`). `turnlake export minari <version>` "
            "writes its `rl_steps` episodes as Minari datasets outside the release and prints the "
            "`MINARI_DATASETS_PATH` to load them from."
        )
    ids = list(section["datasets"])
    views = "\n".join(
        f"| `{v}` | {', '.join(f'`{i}`' for i in ids if section['datasets'][i]['view'] == v)} | "
        f"{VIEWS[v].about} |"
        for v in VIEWS
    )
    fields = "\n".join(f"| `{k}` | {v} |" for k, v in MINARI_FIELDS.items())
    return f"""The `rl_steps` episodes are also [Minari](https://minari.farama.org) datasets (HDF5,
format version {section["format"]}), one per behaviour policy and split, each present in every
release (0 episodes where a split has none):

```python
import os
os.environ["MINARI_DATASETS_PATH"] = "<this release>/{section["path"]}"
import minari
train = minari.load_dataset("{ids[0] if ids else "turnlake/study/train-v0"}")
for episode in train.iterate_episodes():
    episode.observations, episode.actions, episode.rewards, episode.terminations
    train.storage.get_episode_metadata([episode.id])  # its rl_steps `episode_id`
```

| view | dataset ids | episodes |
|---|---|---|
{views}

Observations and actions are gymnasium `Text` spaces (`min_length` 0, `max_length` and `charset`
fitted to the view's texts, the same in every split). A Minari episode holds one observation more
than it has actions: the observation after the last action is in no log, so it is
`{FINAL_OBSERVATION!r}` (never bootstrapped from after a termination; after a truncation it means
"not observed"). A NUL character in a text is stored as U+FFFD (HDF5 strings end at a NUL); the
manifest counts such texts per dataset.

| field | from the `rl_steps` rows |
|---|---|
{fields}"""
