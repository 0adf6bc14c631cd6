"""Loading a release's dataset into Hugging Face `datasets` (`load_release`): the one way the
library hands a release to a trainer, from a local or an S3 data root."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.api.releases import _exports, _store_errors, _version, verify
from pipelines.api.roots import PathLike
from pipelines.storage.objects import ObjectRoot
from pipelines.storage.uri import is_remote

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict


_SPLIT_ORDER = {"train": 0, "validation": 1, "test": 2}  # as a DatasetDict usually lists them


def load_release(
    version: str = "latest",
    config: str = "sft",
    *,
    data_root: PathLike | None = None,
    verify_first: bool = True,
    cache_dir: PathLike | None = None,
) -> DatasetDict:
    """A release's dataset `config` (sft, preference, kto, rl_steps, decisions, …, or the OpenAI
    files' `openai_sft` / `openai_preference`) as a Hugging
    Face `datasets.DatasetDict` with one split per split in the release's manifest, e.g.
    `load_release()["train"]` for a TRL trainer; a split without rows is a `Dataset` of 0 rows
    with the dataset's features. The release is verified first unless
    `verify_first` is False; `cache_dir` is passed to `datasets.load_dataset`. Under an S3 data
    root the release is downloaded once into the root's local cache (`TURNLAKE_CACHE_DIR`) and
    verified there; the copy is reused while its manifest matches the stored one.

    Needs the `datasets` package (`pip install 'turnlake[datasets]'`). Raises `NoRelease`,
    `ReleaseMismatch`, or `KeyError` for a config the release does not hold.
    """
    try:
        from datasets import DatasetDict, load_dataset
    except ImportError as err:
        raise ImportError(
            "load_release needs the `datasets` package: pip install 'turnlake[datasets]' "
            "(or `uv sync --extra datasets`)"
        ) from err
    from pipelines.release.store.files import read_manifest

    exports = _exports(data_root)  # datasets reads local files: the exports, not a store
    if is_remote(exports):  # an S3 data root: a verified copy in its local cache
        from pipelines.api.release_cache import cached_release

        with _store_errors():
            name = _version(ObjectRoot.parse(str(exports)), version)
            folder = cached_release(exports, name, verify_first)
    else:
        state = verify(version, data_root=data_root, store=exports) if verify_first else None
        folder = state.path if state else exports / _version(ObjectRoot.parse(exports), version)
    manifest = read_manifest(folder)
    openai = manifest.get("openai") or {}  # JSONL configs: release/store/openai_files.py
    if config in openai:
        return _load_openai(folder / openai[config]["path"], openai[config]["counts"], cache_dir)
    counts = manifest["counts"]
    profiles = manifest.get("profiles") or {}  # profile configs: release/card/profiles.py
    splits = counts.get(config) or (profiles.get(config) or {}).get("counts")
    if splits is None:
        known = ", ".join(sorted(counts) + sorted(profiles) + sorted(openai))
        raise KeyError(f"release {folder.name} has no dataset {config!r}; it has: {known}")
    path = profiles[config]["path"] if config in profiles else config
    order = _in_split_order(splits)
    data_files = {split: str(folder / path / f"{split}*.parquet") for split in order}
    # `datasets` cannot materialize a split of 0 rows (its reader raises): an empty split is
    # built from its file's columns instead, so every split of the release is there
    full = {split: files for split, files in data_files.items() if splits[split]}
    cache = str(cache_dir) if cache_dir else None
    loaded = load_dataset("parquet", data_files=full, cache_dir=cache) if full else {}
    return DatasetDict(
        {
            split: loaded[split] if split in full else _empty_split(data_files[split])
            for split in order
        }
    )


def _in_split_order(splits: Iterable[str]) -> list[str]:
    """Train, validation, test first, then any other split by name."""
    return sorted(splits, key=lambda split: (_SPLIT_ORDER.get(split, len(_SPLIT_ORDER)), split))


def _load_openai(folder: Path, counts: dict[str, int], cache_dir: PathLike | None) -> DatasetDict:
    """An OpenAI JSONL config, by its folder's own card (release/card/openai.py: `datasets` reads
    one file format per card), a split without lines as 0 rows of the card's features."""
    from datasets import Dataset, DatasetDict, load_dataset, load_dataset_builder

    cache = str(cache_dir) if cache_dir else None
    loaded = load_dataset(str(folder), cache_dir=cache) if any(counts.values()) else {}
    features = load_dataset_builder(str(folder), cache_dir=cache).info.features
    order = _in_split_order(counts)
    empty = features.arrow_schema.empty_table()
    return DatasetDict({s: loaded[s] if counts[s] else Dataset(empty) for s in order})


def _empty_split(pattern: str) -> Dataset:
    """A split of 0 rows with the features of its (empty) Parquet file."""
    import pyarrow.parquet as pq
    from datasets import Dataset

    schema = pq.read_schema(min(Path(pattern).parent.glob(Path(pattern).name)))
    return Dataset(schema.empty_table())
