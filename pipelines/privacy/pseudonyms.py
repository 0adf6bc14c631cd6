"""Keyed pseudonyms for subject ids, and replacement of real ids inside text.

A pseudonym is `"<kind>_" + hex(HMAC-SHA256(key, kind NUL real_id))[:16]`: stable for one key, so
one subject has one pseudonym across every dataset of a release, and unlinkable without the key.
The key comes from the environment (`TURNLAKE_PSEUDONYM_KEY`) or from a file named in
turnlake.toml (`[privacy] pseudonym_key_file`); it is never a literal in the TOML and never
written to a release.

`IdReplacer` replaces every occurrence of known real ids inside longer strings (a participant
uuid inside the session id `<uuid>_niki_1767943131`, ids in JSON text), longest id first. An
occurrence counts only where it is not glued to a further letter or digit, so `u-7` does not eat
the start of `u-71` (`_`, `-`, `/`, quotes and punctuation are boundaries). Many texts at once
(`replace_many_counted`) go through Polars' Aho-Corasick search, built in milliseconds; one text
at a time through one trie-shaped regex (its cost does not grow with the number of ids), compiled
on first use only: compiling it costs about a second per 10 000 ids.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

KEY_ENV = "TURNLAKE_PSEUDONYM_KEY"
MIN_KEY_BYTES = 16
_ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


class PseudonymKeyError(RuntimeError):
    """No usable pseudonym key: the caller decides the fallback (refuse to release, or a dev
    key)."""


class Pseudonymizer:
    """`pseudonym(kind, real_id)` = f"{kind}_{hmac_sha256(key, kind NUL real_id)[:16]}"."""

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, bytes | bytearray) or not key:
            raise PseudonymKeyError("pseudonym key must be non-empty bytes")
        self._key = bytes(key)

    def pseudonym(self, kind: str, real_id: str) -> str:
        """Stable keyed pseudonym of `real_id` in the namespace `kind` (e.g. participant, actor)."""
        digest = hmac.new(self._key, f"{kind}\x00{real_id}".encode(), hashlib.sha256).hexdigest()
        return f"{kind}_{digest[:16]}"

    def mapping(self, kind: str, real_ids: Any) -> dict[str, str]:
        """real id → pseudonym for every non-empty id in `real_ids` (any iterable or Series)."""
        return {
            str(i): self.pseudonym(kind, str(i)) for i in real_ids if i is not None and str(i) != ""
        }

    def __repr__(self) -> str:  # never show the key
        return "Pseudonymizer(key=<hidden>)"


class IdReplacer:
    """Replaces every known real id in text by its pseudonym."""

    def __init__(self, mapping: Mapping[str, str]) -> None:
        self.mapping = {k: v for k, v in mapping.items() if k}
        self._encoded = {k.encode(): v.encode() for k, v in self.mapping.items()}
        self._lengths = sorted({len(k) for k in self._encoded}, reverse=True)

    @cached_property
    def _pattern(self) -> re.Pattern[str] | None:
        if not self.mapping:
            return None
        return re.compile(rf"(?<![A-Za-z0-9])(?:{trie_pattern(self.mapping)})(?![A-Za-z0-9])")

    def replace(self, text: str) -> str:
        """`text` with every occurrence of a known id replaced (None passes through)."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda m: self.mapping[m.group(0)], text)

    def replace_counted(self, text: str) -> tuple[str, int]:
        """Like `replace`, also returning how many occurrences were replaced."""
        if self._pattern is None or not text:
            return text, 0
        return self._pattern.subn(lambda m: self.mapping[m.group(0)], text)

    def replace_many(self, texts: Sequence[str]) -> list[str]:
        return [text for text, _ in self.replace_many_counted(texts)]

    def replace_many_counted(self, texts: Sequence[str]) -> list[tuple[str, int]]:
        """`replace_counted` of each text, without the regex: every place an id occurs is found
        by one Aho-Corasick search over all texts, and the occurrences the regex would replace
        (the longest id at a start that is a boundary on both sides, left to right, not
        overlapping) are picked in the texts' UTF-8 bytes, where its offsets are."""
        if not self.mapping or not texts:
            return [(text, 0) for text in texts]
        found = pl.Series(texts, dtype=pl.String).str.find_many(
            list(self.mapping), overlapping=True
        )
        return [
            self._replaced_at(text, starts) if starts else (text, 0)
            for text, starts in zip(texts, found.to_list(), strict=True)
        ]

    def _replaced_at(self, text: str, starts: list[int]) -> tuple[str, int]:
        raw = text.encode()
        pieces: list[bytes] = []
        end = n = 0
        for start in sorted(set(starts)):
            if start < end or (start and raw[start - 1] in _ALNUM):
                continue
            for length in self._lengths:
                stop = start + length
                pseudonym = self._encoded.get(raw[start:stop]) if stop <= len(raw) else None
                if pseudonym is not None and (stop == len(raw) or raw[stop] not in _ALNUM):
                    pieces += [raw[end:start], pseudonym]
                    end, n = stop, n + 1
                    break
        if not n:
            return text, 0
        return (b"".join(pieces) + raw[end:]).decode(), n


def trie_pattern(words: Iterable[str]) -> str:
    """A regex matching exactly `words`, shaped as their prefix tree. Ids matching at one position
    are prefixes of each other, and every branch tries its longer continuation before stopping, so
    backtracking visits them longest first, like an alternation sorted by length."""
    trie: dict = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return _render(trie)


def _render(node: dict) -> str:
    ends_here = "" in node
    branches = [re.escape(char) + _render(child) for char, child in sorted(node.items()) if char]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
    if ends_here:
        return f"(?:{body})?"
    return body


def key_from_env_or_file(
    key_file: str | None,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> bytes:
    """The pseudonym key: env `TURNLAKE_PSEUDONYM_KEY` first, else the file `key_file` (relative
    paths against `base_dir`, default the working directory; surrounding whitespace stripped).
    Raises `PseudonymKeyError` when neither is set, the file is missing or empty, or the key is
    shorter than 16 bytes."""
    env = os.environ if environ is None else environ
    value = env.get(KEY_ENV)
    if value:
        return _checked(value.strip().encode(), f"environment variable {KEY_ENV}")
    if key_file:
        path = Path(str(key_file)).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise PseudonymKeyError(
                f"cannot read pseudonym key file {path}: {exc.strerror or exc}"
            ) from None
        return _checked(raw.strip(), f"pseudonym key file {path}")
    raise PseudonymKeyError(
        f"no pseudonym key: set the environment variable {KEY_ENV} or [privacy] pseudonym_key_file "
        "in turnlake.toml (a file holding at least 16 bytes, e.g. `openssl rand -hex 32 > key`)"
    )


def _checked(key: bytes, where: str) -> bytes:
    if len(key) < MIN_KEY_BYTES:
        raise PseudonymKeyError(
            f"{where} holds {len(key)} bytes; a pseudonym key needs at least {MIN_KEY_BYTES}"
        )
    return key
