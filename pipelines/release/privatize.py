"""What a release may contain: subject ids replaced by keyed pseudonyms wherever they appear
(columns, session ids, text, JSON), released text redacted, a ledger of what was replaced
(counts by kind and dataset, never values). Silver keeps the real ids; releases never do."""

from __future__ import annotations

import hashlib
import hmac
import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.config import Settings, load_config_file
from pipelines.privacy.pseudonyms import (
    IdReplacer,
    Pseudonymizer,
    PseudonymKeyError,
    key_from_env_or_config,
)
from pipelines.privacy.redact import Redactor, redaction_config_from
from pipelines.splits import human_participants

GENERATED_KEY = Path(".turnlake") / "pseudonym.key"  # under the data root, never in a release


@dataclass(frozen=True)
class Privatized:
    datasets: dict[str, pl.DataFrame]
    ledger: dict[str, dict[str, int]]  # dataset -> kind -> replacements
    replace_ids: Callable[[str], str]


def pseudonym_key(settings: Settings) -> tuple[bytes, str]:
    """The configured key (env or key file), else a random key generated once under the data root."""
    config = load_config_file(settings.config_path)
    try:
        return key_from_env_or_config(config, base_dir=settings.config_path.parent if settings.config_path else None), "configured"
    except PseudonymKeyError:
        if (config.get("privacy") or {}).get("pseudonym_key_file"):
            raise  # a configured key that cannot be read must not be silently replaced
    path = settings.data_root / GENERATED_KEY
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(os.urandom(32).hex())
    return path.read_text().strip().encode(), f"generated ({path})"


def subject_ids(silver: Mapping[str, pl.DataFrame]) -> list[str]:
    """Real ids of human subjects (participants, decision humans, raters) as the sources write them."""
    people = human_participants(silver).get_column("participant_id").str.splitn(":", 2).struct.field("field_1")
    return sorted(set(people.drop_nulls().to_list()) - {""})


def _map_values(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_map_values(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map_values(v, fn) for k, v in value.items()}
    return value


def _is_textual(dtype: pl.DataType) -> bool:
    if dtype == pl.String:
        return True
    if isinstance(dtype, pl.List):
        return _is_textual(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return any(_is_textual(f.dtype) for f in dtype.fields)
    return False


class _TextCleaner:
    """Pseudonymize then redact one text value; each distinct value is computed once, but counted
    every time it occurs."""

    def __init__(self, replacer: IdReplacer, redactor: Redactor) -> None:
        self.replacer, self.redactor = replacer, redactor
        self.cache: dict[str, tuple[str, int, Counter[str]]] = {}

    def __call__(self, text: str, counts: Counter[str]) -> str:
        hit = self.cache.get(text)
        if hit is None:
            replaced, n_ids = self.replacer.replace_counted(text)
            redacted, kinds = self.redactor.redact(replaced)
            hit = self.cache[text] = (redacted, n_ids, kinds)
        counts["pseudonym"] += hit[1]
        counts.update(hit[2])
        return hit[0]


def _keyed_hash(key: bytes, value: str | None) -> str | None:
    # Keyed, so the hash of a short prompt cannot be looked up in a dictionary of prompts.
    return None if value is None else hmac.new(key, value.encode(), hashlib.sha256).hexdigest()


def privatize(datasets: dict[str, pl.DataFrame], silver: Mapping[str, pl.DataFrame], key: bytes,
              config: Mapping[str, Any]) -> Privatized:
    """Pseudonymize every subject id and redact every text value in every dataset (`config` is the
    parsed turnlake.toml; its [privacy.redaction] table configures the redactor)."""
    pseudonyms = Pseudonymizer(key)
    replacer = IdReplacer({real: pseudonyms.pseudonym("person", real) for real in subject_ids(silver)})
    cleaner = _TextCleaner(replacer, Redactor(redaction_config_from(config)))
    ledger: dict[str, dict[str, int]] = {}
    out = {}
    for name, frame in datasets.items():
        counts: Counter[str] = Counter()
        columns = []
        for column, dtype in frame.schema.items():
            values = frame[column].to_list()
            if column == "prompt_hash":
                columns.append(pl.Series(column, [_keyed_hash(key, v) for v in values], dtype=dtype))
            elif _is_textual(dtype):
                clean = partial(cleaner, counts=counts)
                columns.append(pl.Series(column, [_map_values(v, clean) for v in values], dtype=dtype))
            else:
                columns.append(frame[column])
        out[name] = pl.DataFrame(columns)
        ledger[name] = dict(sorted(counts.items()))
    return Privatized(out, ledger, replacer.replace)
