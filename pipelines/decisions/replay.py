"""Replay sets (`turnlake decision replay`): each selected decision's prompt rebuilt by the
release's prompt builder from its own context with the identity swapped for a persona, as an
OpenAI-style chat batch file (one request per decision, `custom_id` = decision id) and as
Parquet. No model is called."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import orjson
import polars as pl

from pipelines.decisions.catalog import as_released
from pipelines.decisions.persona import Persona
from pipelines.exports.datasets.decisions import decision_prompts
from pipelines.storage.files import write_bytes_atomic, write_parquet_atomic

BATCH_URL = "/v1/chat/completions"
_NO_CONTEXT = "replay:no-context"  # key for decisions stored without any context


def swap_identity(context: str | None, persona: Persona) -> str:
    """The context JSON with `rag_context.identity` replaced by the persona's; the conversation
    history, ambient state and coordination snapshot are kept as they were."""
    parsed = orjson.loads(context) if context else {}
    rag = parsed.get("rag_context") if isinstance(parsed.get("rag_context"), dict) else {}
    parsed["rag_context"] = {**rag, "identity": persona.identity}
    return orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS).decode()


def replay_rows(
    silver: dict[str, pl.DataFrame],
    gold: dict[str, pl.DataFrame],
    decision_ids: list[str],
    persona: Persona,
    kinds: Collection[str],
) -> pl.DataFrame:
    """One row per selected decision: its id, the persona, the original action and response, and
    `messages` (the prompt the release holds, `as_released` under `kinds`, with the persona's
    identity)."""
    chosen = silver["decisions"].filter(pl.col("decision_id").is_in(decision_ids))
    chosen = chosen.with_columns(context_hash=pl.col("context_hash").fill_null(_NO_CONTEXT))
    stored = silver["contexts"].filter(pl.col("context_hash").is_in(chosen["context_hash"]))
    contexts = pl.concat(
        [stored.select("context_hash", "context"), pl.DataFrame({"context_hash": [_NO_CONTEXT]})],
        how="diagonal",
    ).with_columns(
        context=pl.col("context").map_elements(
            lambda text: swap_identity(text, persona), return_dtype=pl.String, skip_nulls=False
        )
    )
    prompts = decision_prompts(silver | {"decisions": chosen, "contexts": contexts}, gold)
    shaped = as_released(prompts, silver, kinds)
    return shaped.sort(["ts", "decision_id"], nulls_last=True).select(
        "decision_id",
        "episode_id",
        "actor_id",
        persona=pl.lit(persona.name),
        original_action="action",
        original_response="response",
        messages="prompt",
    )


def batch_lines(rows: pl.DataFrame, model: str) -> bytes:
    """The OpenAI Batch API input file: one chat-completions request per decision."""
    lines = [
        orjson.dumps(
            {
                "custom_id": row["decision_id"],
                "method": "POST",
                "url": BATCH_URL,
                "body": {"model": model, "messages": row["messages"]},
            }
        )
        for row in rows.select("decision_id", "messages").iter_rows(named=True)
    ]
    return b"".join(line + b"\n" for line in lines)


def write_replay_set(rows: pl.DataFrame, persona: Persona, model: str, to: Path) -> list[Path]:
    """`<to>/<persona>.batch.jsonl` and `<to>/<persona>.parquet` (each written atomically)."""
    to.mkdir(parents=True, exist_ok=True)
    batch, table = to / f"{persona.slug}.batch.jsonl", to / f"{persona.slug}.parquet"
    write_bytes_atomic(batch, batch_lines(rows, model))
    write_parquet_atomic(rows, table)
    return [batch, table]
