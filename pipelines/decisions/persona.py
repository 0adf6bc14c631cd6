"""A replay persona: the identity (system prompt) that replaces the actor's own.

`--persona FILE`: a `.toml` or `.json` file holds `system_prompt` (required), `name` (default: the
file's stem) and any other identity fields (`role`, …), which go into the replayed
`identity` beside `systemPrompt`; any other file is the system prompt itself, as text.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class BadPersona(ValueError):
    """The persona file is missing, unreadable, or holds no system prompt."""


@dataclass(frozen=True)
class Persona:
    name: str
    system_prompt: str
    identity_fields: dict[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> dict[str, Any]:
        """The `rag_context.identity` object the replayed actor sees."""
        return {**self.identity_fields, "systemPrompt": self.system_prompt}

    @property
    def slug(self) -> str:
        """The name as a file name part."""
        return re.sub(r"[^A-Za-z0-9._-]+", "-", self.name).strip("-.") or "persona"


def _structured(path: Path, text: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise BadPersona(f"{path}: not valid {path.suffix[1:].upper()}: {exc}") from None
    if not isinstance(data, dict):
        raise BadPersona(f"{path}: should hold an object with `system_prompt`")
    return data


def read_persona(path: Path) -> Persona:
    """The persona in `path` (see the module docstring); `BadPersona` says what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadPersona(f"cannot read persona file {path}: {exc}") from None
    if path.suffix not in (".toml", ".json"):
        if not text.strip():
            raise BadPersona(f"{path}: the persona file is empty")
        return Persona(path.stem, text.strip())
    data = _structured(path, text)
    prompt = data.pop("system_prompt", None)
    if not isinstance(prompt, str) or not prompt.strip():
        raise BadPersona(f"{path}: `system_prompt` must be a non-empty string")
    name = data.pop("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise BadPersona(f"{path}: `name` must be a non-empty string")
    return Persona(name.strip(), prompt.strip(), data)
