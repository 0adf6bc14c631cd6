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
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.config import Settings, load_config_file
from pipelines.privacy.prefilter import detector_gates
from pipelines.privacy.pseudonyms import (
    IdReplacer,
    Pseudonymizer,
    PseudonymKeyError,
    key_from_env_or_config,
)
from pipelines.privacy.redact import Redactor, redaction_config_from
from pipelines.release.redaction_memo import RedactionMemo
from pipelines.release.text_leaves import is_textual, replace_strings, string_leaves
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


class _TextCleaner:
    """Pseudonymize then redact one text value, each distinct value once: the cleaned text, and
    the replacements by kind it took."""

    def __init__(self, replacer: IdReplacer, redactor: Redactor, memo: RedactionMemo | None = None) -> None:
        self.replacer, self.redactor, self.memo = replacer, redactor, memo
        self.cache: dict[str, tuple[str, Counter[str]]] = {}

    def __call__(self, text: str, possible: frozenset[str]) -> tuple[str, Counter[str]]:
        """`possible`: the detectors (and `pseudonym`) whose prefilter gate `text` passes."""
        hit = self.cache.get(text)
        if hit is None:
            if "pseudonym" in possible:  # the gates saw the text before its ids were replaced
                replaced, n_ids = self.replacer.replace_counted(text)
                redacted, kinds = self.redactor.redact(replaced)
            else:  # no subject id in it: what the redactor makes of it depends on the text alone
                n_ids = 0
                redacted, kinds = self._redact_remembered(text, possible)
            hit = self.cache[text] = (redacted, kinds + Counter(pseudonym=n_ids))
        return hit


    def _redact_remembered(self, text: str, possible: frozenset[str]) -> tuple[str, Counter[str]]:
        remembered = self.memo.get(text) if self.memo is not None else None
        if remembered is not None:
            return remembered
        redacted, kinds = self.redactor.redact(text, only=possible)
        if self.memo is not None:
            self.memo.put(text, redacted, kinds)
        return redacted, kinds


def _keyed_hash(key: bytes, value: str | None) -> str | None:
    # Keyed, so the hash of a short prompt cannot be looked up in a dictionary of prompts.
    return None if value is None else hmac.new(key, value.encode(), hashlib.sha256).hexdigest()


def _keyed_hashes(column: pl.Series, key: bytes) -> pl.Series:
    distinct = column.drop_nulls().unique()
    hashed = pl.Series([_keyed_hash(key, v) for v in distinct], dtype=pl.String)
    return column.replace(distinct, hashed)


def _clean_frame(frame: pl.DataFrame, key: bytes, cleaner: _TextCleaner,
                 gates: dict[str, pl.Expr]) -> tuple[pl.DataFrame, dict[str, int]]:
    """`frame` pseudonymized and redacted, and its ledger. Python sees each distinct candidate text
    once; a text repeated n times counts n times."""
    textual = [c for c, t in frame.schema.items() if c != "prompt_hash" and is_textual(t)]
    texts = string_leaves(frame, textual)
    counts: Counter[str] = Counter()
    if texts.len():
        counts["pseudonym"] = 0  # the ledger names pseudonyms wherever there was text, even none replaced
    old, new = [], []
    candidates = texts.value_counts(name="n").select(
        "value", "n", *(gate.alias(kind) for kind, gate in gates.items())
    ).filter(pl.any_horizontal(*gates))
    for value, n, *passed in candidates.iter_rows():
        cleaned, found = cleaner(value, frozenset(kind for kind, ok in zip(gates, passed, strict=True) if ok))
        for kind, k in found.items():
            counts[kind] += k * n
        if cleaned != value:
            old.append(value)
            new.append(cleaned)
    changes = [replace_strings(pl.col(c), frame.schema[c], pl.Series(old, dtype=pl.String),
                               pl.Series(new, dtype=pl.String)).alias(c) for c in textual] if old else []
    if "prompt_hash" in frame.columns:
        changes.append(_keyed_hashes(frame["prompt_hash"], key))
    return frame.with_columns(changes), dict(sorted(counts.items()))


def privatize(datasets: dict[str, pl.DataFrame], silver: Mapping[str, pl.DataFrame], key: bytes,
              config: Mapping[str, Any], memo: RedactionMemo | None = None) -> Privatized:
    """Pseudonymize every subject id and redact every text value in every dataset (`config` is the
    parsed turnlake.toml; its [privacy.redaction] table configures the redactor). Only the texts
    that a prefilter gate passes reach Python, and only the detectors whose gate they pass; texts
    without a subject id that an earlier release already redacted come from `memo`."""
    pseudonyms = Pseudonymizer(key)
    ids = subject_ids(silver)
    replacer = IdReplacer({real: pseudonyms.pseudonym("person", real) for real in ids})
    redaction = redaction_config_from(config)
    cleaner = _TextCleaner(replacer, Redactor(redaction), memo)
    gates = detector_gates(pl.col("value"), ids, redaction)
    ledger: dict[str, dict[str, int]] = {}
    out = {}
    for name, frame in datasets.items():
        out[name], ledger[name] = _clean_frame(frame, key, cleaner, gates)
    return Privatized(out, ledger, replacer.replace)
