"""Bronze contract of the `hh_rlhf` source: one row per HH-RLHF pair (one raw line), split into the
shared prompt and the two answers (pipelines/sources/hh_rlhf/records.py states the rules)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from pipelines.schemas.strict import StrictModel

TURN = pl.Struct({"role": pl.String, "text": pl.String})


class HhRlhfPairs(StrictModel):
    file: str = pa.Field(
        description="Raw file, relative to the raw root (`hh_rlhf/<dataset>/...jsonl[.gz]`)."
    )
    locator: str = pa.Field(
        description="Where the record starts: `line N (byte B)`, in the decompressed text of a .gz."
    )
    line: pl.Int64 = pa.Field(
        ge=1, description="1-based line of the pair; orders records in a file."
    )
    dataset: str = pa.Field(
        description="First folder under `hh_rlhf/` (e.g. `harmless-base`; `default` directly "
        "under it)."
    )
    pair_id: str = pa.Field(
        description="Hash of the chosen and rejected transcripts: the same pair twice is one pair."
    )
    prompt_id: str = pa.Field(
        description="Hash of the prompt's turns: pairs answering one conversation share it."
    )
    prompt: pl.List(TURN) = pa.Field(
        description="Turns both transcripts share, up to their last shared Human turn "
        "(role Human/Assistant)."
    )
    chosen: pl.List(TURN) = pa.Field(
        description="The chosen transcript's answer: its Assistant turns after the prompt."
    )
    rejected: pl.List(TURN) = pa.Field(
        description="The rejected transcript's answer: its Assistant turns after the prompt."
    )
    notes: pl.List(pl.String) = pa.Field(
        description="Odd-case rules the pair needed: consecutive_assistant_turns, "
        "assistant_text_starts_with_marker, empty_turn."
    )
    extra: str = pa.Field(
        nullable=True,
        description="Fields other than chosen/rejected as a JSON object (never dropped).",
    )


BRONZE_MODELS: dict[str, type[pa.DataFrameModel]] = {"hh_rlhf_pairs": HhRlhfPairs}
