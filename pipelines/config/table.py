"""The base of every turnlake.toml table model."""

from pydantic import BaseModel, ConfigDict


class Table(BaseModel):
    """A TOML table: only the keys declared, each of its declared type (no silent coercion)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
