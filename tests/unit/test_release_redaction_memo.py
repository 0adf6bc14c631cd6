"""The redaction memo: a rebuild with it gives exactly the release it gives without it, redacts
only texts it has not seen, stores no original text, and is dropped when the config changes."""

from __future__ import annotations

import polars as pl
from polars.testing import assert_frame_equal

import pipelines.release.privatize.privatize as privatize_module
from pipelines.privacy.redact import RedactionConfig
from pipelines.release.privatize.privatize import privatize
from pipelines.release.privatize.redaction_memo import (
    RedactionMemo,
    load_memo,
    memo_fingerprint,
    save_memo,
)
from pipelines.storage.layout import Layout

KEY = b"k" * 32
TEXTS = [
    "mail me at ana.berg@example.com",
    "call +1 (555) 123-4567 now",
    "revenue was $1,200",
    "plain words",
    "user u-17 wrote 10.0.0.1",
]


def _datasets() -> dict[str, pl.DataFrame]:
    return {"sft": pl.DataFrame({"split": ["train"] * len(TEXTS), "text": TEXTS})}


def test_rebuild_with_the_memo_equals_a_build_without_and_redacts_nothing_again(
    tmp_path, monkeypatch, redactor_calls
):
    monkeypatch.setattr(privatize_module, "subject_ids", lambda silver: ["u-17"])
    fingerprint = memo_fingerprint(RedactionConfig())
    plain = privatize(_datasets(), {}, KEY, {})
    first_memo = load_memo(tmp_path, KEY, fingerprint)
    first = privatize(_datasets(), {}, KEY, {}, first_memo)
    save_memo(first_memo, tmp_path, fingerprint)
    seen = redactor_calls.texts
    seen.clear()  # only what the rebuild redacts
    second_memo = load_memo(tmp_path, KEY, fingerprint)
    second = privatize(_datasets(), {}, KEY, {}, second_memo)
    for result in (first, second):
        assert result.ledger == plain.ledger
        assert_frame_equal(result.datasets["sft"], plain.datasets["sft"])
    assert second_memo.hits == 4  # e-mail, phone, money texts, and "u-17 …" with its id replaced
    assert seen == []


def test_memo_file_holds_no_original_text_and_no_subject_id(tmp_path, monkeypatch):
    monkeypatch.setattr(privatize_module, "subject_ids", lambda silver: ["u-17"])
    fingerprint = memo_fingerprint(RedactionConfig())
    memo = load_memo(tmp_path, KEY, fingerprint)
    privatize(_datasets(), {}, KEY, {}, memo)
    save_memo(memo, tmp_path, fingerprint)
    stored = str(pl.read_parquet(Layout(tmp_path).redaction_memo(fingerprint)).to_dicts())
    assert (
        "ana.berg" not in stored
        and "555" not in stored
        and "1,200" not in stored
        and "u-17" not in stored
    )
    assert "[EMAIL]" in stored and "[PHONE]" in stored


def test_a_changed_redaction_config_starts_a_new_memo_and_drops_the_old(tmp_path, monkeypatch):
    monkeypatch.setattr(privatize_module, "subject_ids", lambda silver: [])
    old, new = (
        memo_fingerprint(RedactionConfig()),
        memo_fingerprint(RedactionConfig(org_names=["Acme"])),
    )
    assert old != new
    memo = load_memo(tmp_path, KEY, old)
    privatize(_datasets(), {}, KEY, {}, memo)
    save_memo(memo, tmp_path, old)
    assert load_memo(tmp_path, KEY, new).known == {}
    save_memo(load_memo(tmp_path, KEY, new), tmp_path, new)
    assert [p.stem for p in Layout(tmp_path).redaction_memo_dir.glob("*.parquet")] == [new]


def test_unchanged_texts_with_the_same_counts_share_one_entry_after_put_and_load(tmp_path):
    """Nearly every text is left unchanged: one shared entry each, not a tuple and a dict per
    text (the memo's memory at 1 GB of raw files)."""
    memo = RedactionMemo(KEY)
    memo.put("plain words", "plain words", {})
    memo.put("other words", "other words", {})
    memo.put("call 555", "call [PHONE]", {"phone": 1})
    first, second = (memo.used[memo._mac(t)] for t in ("plain words", "other words"))
    assert first == (None, {}) and first is second
    save_memo(memo, tmp_path, "fp")
    loaded = load_memo(tmp_path, KEY, "fp")
    plain, other = (loaded.known[loaded._mac(t)] for t in ("plain words", "other words"))
    assert plain is other
    assert loaded.get("call 555") == ("call [PHONE]", {"phone": 1})
