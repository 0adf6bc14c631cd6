"""`dialogue` silver is unit-local (pipelines/transforms/dialogue/units.py): silver of the whole
bronze equals the union of silver over any split of its components, given the whole corpus's
quality ranges."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import polars as pl
import pytest

from pipelines.transforms import units as u
from pipelines.transforms.dialogue import units as dialogue_units
from tests.unit._locality import (
    PROJECT,
    assert_bronze_unit_local,
    assert_unit_local,
    fixture_settings,
)
from tests.unit._unit_corpora import FIXTURES, bronze_rows, demo_raw

SOURCE = "dialogue"
CONVERSATIONS, EVENTS = "dialogue_conversations", "dialogue_feedback_events"
SETTINGS = fixture_settings(PROJECT / "tests" / "fixtures" / "clean")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("kind", ["clean", "dirty"])
@pytest.mark.parametrize("parts", [2, 3])
def test_fixture_silver_is_unit_local(kind, parts):
    assert assert_unit_local(SOURCE, FIXTURES / kind, parts=parts, seed=parts) >= 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_demo_silver_is_unit_local_for_two_to_five_parts(tmp_path, seed):
    raw = demo_raw(SOURCE, tmp_path / "raw", seed)
    for parts in range(2, 6):
        assert assert_unit_local(SOURCE, raw, parts=parts, seed=seed) > parts


def _conversation(cid: str, quality: float | None = None, line: int = 1) -> dict:
    turns = [{"role": "user", "content": f"hi {cid}", "ts": T0, "extra": None}]
    return {
        "file": f"dialogues/support/{cid}.jsonl",
        "locator": f"line {line} (byte 0)",
        "line": line,
        "dataset": "support",
        "conversation_id": cid,
        "turns": turns,
        "tags": [],
        "quality": quality,
        "created_at": T0,
        "record_hash": f"h-{cid}",
    }


def _event(key: str, cid: str, user: str | None, line: int, rating: float = 1.0) -> dict:
    return {
        "file": "feedback/support/events.jsonl",
        "locator": f"line {line} (byte 0)",
        "line": line,
        "dataset": "support",
        "event_id": key,
        "event_key": key,
        "conversation_id": cid,
        "rating": rating,
        "observed_at": T0,
        "record_hash": f"h-{key}-{cid}",
        "extra": None if user is None else f'{{"user_id":"{user}"}}',
    }


def _three_conversations(events: list[dict]) -> dict[str, pl.LazyFrame]:
    """Bronze of conversations c1, c2, c3 and these feedback events."""
    return {
        CONVERSATIONS: bronze_rows(
            SOURCE, CONVERSATIONS, [_conversation(c) for c in ("c1", "c2", "c3")]
        ),
        EVENTS: bronze_rows(SOURCE, EVENTS, events),
    }


def _tiny_bronze() -> dict[str, pl.LazyFrame]:
    """c1 and c2 rated by one rater (u1); event k5 delivered twice, naming c3 then c1; k9 names
    the unknown c9."""
    return _three_conversations(
        [
            _event("k1", "c1", "u1", 1),
            _event("k2", "c2", "u1", 2),
            _event("k9", "c9", None, 3),
            _event("k5", "c3", None, 4),
            _event("k5", "c1", None, 5, rating=-1.0),
        ]
    )


def test_unit_keys_and_links_by_hand():
    tagged = dialogue_units.unit_keys(_tiny_bronze(), SETTINGS)
    units = {t: f.collect().get_column(u.UNIT).to_list() for t, f in tagged.items()}
    assert units == {
        CONVERSATIONS: ["dialogue:support/c1", "dialogue:support/c2", "dialogue:support/c3"],
        EVENTS: [
            "dialogue:support/c1",
            "dialogue:support/c2",
            "dialogue:support/c9",
            "dialogue:support/c3",
            "dialogue:support/c1",
        ],
    }
    links = dialogue_units.unit_links(_tiny_bronze(), SETTINGS).collect()
    assert sorted(links.rows()) == [
        ("dialogue:support/c1", "event:k5"),
        ("dialogue:support/c3", "event:k5"),
    ]


def test_conversations_rated_by_one_rater_are_one_group_in_the_evidence():
    """c1 and c2 share the rater u1 (same start: the smaller id names the group); c3's only
    event, k5, was re-delivered naming c1 and has no rater: c3 is a group of its own."""
    evidence = dialogue_units.unit_evidence(_tiny_bronze(), SETTINGS)["people_groups"].collect()
    assert sorted(evidence.rows()) == [
        ("dialogue:support/c1", "dialogue:support/c1"),
        ("dialogue:support/c2", "dialogue:support/c1"),
        ("dialogue:support/c3", "dialogue:support/c3"),
    ]
    reads = dialogue_units.unit_evidence_reads(_tiny_bronze(), SETTINGS)["people_groups"]
    assert sorted(reads.collect().rows()) == [
        (f"dialogue:support/{c}",) * 2 for c in ("c1", "c2", "c3")
    ]


def test_unit_groups_are_the_evidence_people_groups():
    """The plan computes the rater groups once, as evidence; `unit_groups` takes them from there:
    given groups that differ from what the bronze would give, it returns those, one per kept
    conversation."""
    given = pl.DataFrame(
        {
            "episode_id": [f"dialogue:support/{c}" for c in ("c1", "c2", "c3")],
            "people_group": ["dialogue:support/c3"] * 3,
        }
    )
    groups = dialogue_units.unit_groups(_tiny_bronze(), SETTINGS, {"people_groups": given.lazy()})
    assert sorted(groups.collect().rows()) == [
        (f"dialogue:support/{c}", "dialogue:support/c3", 1) for c in ("c1", "c2", "c3")
    ]
    computed = u.unit_groups(SOURCE, _tiny_bronze(), SETTINGS)  # evidence made here
    assert sorted(computed.rows()) == [
        ("dialogue:support/c1", "dialogue:support/c1", 1),
        ("dialogue:support/c2", "dialogue:support/c1", 1),
        ("dialogue:support/c3", "dialogue:support/c3", 1),
    ]


def _failed_splits(bronze: dict[str, pl.LazyFrame] | None = None) -> int:
    """How many of 8 random two-part splits of `bronze` (default `_tiny_bronze`) are not exact."""
    bronze = _tiny_bronze() if bronze is None else bronze
    failures = 0
    for seed in range(8):
        try:
            assert_bronze_unit_local(SOURCE, bronze, SETTINGS, parts=2, seed=seed)
        except AssertionError:
            failures += 1
    return failures


def test_dropping_the_event_links_breaks_locality(monkeypatch):
    assert _failed_splits() == 0  # every split is exact with the links …
    links = dialogue_units.unit_links
    monkeypatch.setattr(
        dialogue_units,
        "unit_links",
        lambda b, s: links(b, s).filter(~pl.col("link").str.starts_with("event:")),
    )
    assert _failed_splits() > 0  # … and some split that separates c1 and c3 is not without them


def test_dropping_the_rater_groups_breaks_locality(monkeypatch):
    """A part holding c2 without c1 names c2's group after c2 unless it is given the groups."""
    assert _failed_splits() == 0
    evidence = dialogue_units.unit_evidence
    monkeypatch.setattr(
        dialogue_units,
        "unit_evidence",
        lambda b, s: {k: v for k, v in evidence(b, s).items() if k != "people_groups"},
    )
    assert _failed_splits() > 0


def test_quality_scale_of_a_part_comes_from_the_whole_dataset():
    """0.5 and 3 in one dataset fit neither [0,1] nor 1–5: both are `raw`, also in a partition
    holding only one of them; left to itself the partition would call 0.5 `[0,1]`."""
    bronze = {
        CONVERSATIONS: bronze_rows(
            SOURCE, CONVERSATIONS, [_conversation("c1", 0.5), _conversation("c2", 3.0)]
        )
    }
    evidence = u.evidence(SOURCE, bronze, SETTINGS)
    assert evidence["quality_ranges"].collect().rows() == [("support", 0.5, 3.0)]
    only_c1 = {t: f.filter(pl.col("conversation_id") == "c1") for t, f in bronze.items()}

    def scales(silver: dict[str, pl.DataFrame]) -> list[tuple[str, str]]:
        return silver["feedback"].sort("episode_id").select("episode_id", "scale").rows()

    assert scales(u.transform(SOURCE, bronze, SETTINGS)) == [
        ("dialogue:support/c1", "raw"),
        ("dialogue:support/c2", "raw"),
    ]
    assert scales(u.transform(SOURCE, only_c1, SETTINGS, evidence)) == [
        ("dialogue:support/c1", "raw")
    ]
    assert scales(u.transform(SOURCE, only_c1, SETTINGS)) == [("dialogue:support/c1", "[0,1]")]


def test_a_partition_reads_only_its_datasets_quality_range(monkeypatch):
    """Each rated conversation reads its dataset's range, and a partition given only the rows its
    conversations read is exact; given none, 0.5 and 0.7 would be `raw`, not `[0,1]`."""
    rated = [_conversation("c1", 0.5), _conversation("c2", 0.7), _conversation("c3")]
    bronze = {CONVERSATIONS: bronze_rows(SOURCE, CONVERSATIONS, rated)}
    reads = dialogue_units.unit_evidence_reads(bronze, SETTINGS).items()
    assert {name: sorted(frame.collect().rows()) for name, frame in reads} == {
        "quality_ranges": [("dialogue:support/c1", "support"), ("dialogue:support/c2", "support")],
        "people_groups": [(f"dialogue:support/{c}",) * 2 for c in ("c1", "c2", "c3")],
    }

    assert _failed_splits(bronze) == 0
    nothing = pl.LazyFrame(schema={u.UNIT: pl.String, "dataset": pl.String})
    reads_of = dialogue_units.unit_evidence_reads
    monkeypatch.setattr(
        dialogue_units,
        "unit_evidence_reads",
        lambda b, s: reads_of(b, s) | {"quality_ranges": nothing},
    )
    assert _failed_splits(bronze) > 0


def test_only_accepted_events_that_give_feedback_link_their_raters():
    """u1 rates c1 (accepted), c2 at turn 99 of a one-turn conversation (rejected, no feedback
    row) and c3 with no rating, reward or comment (no feedback row): only c1 has a rater, so
    each conversation is its own group, in the evidence as in the whole transform."""
    no_signal = _event("k3", "c3", "u1", 3) | {"rating": None}
    bronze = _three_conversations(
        [_event("k1", "c1", "u1", 1), _event("k2", "c2", "u1", 2) | {"turn_index": 99}, no_signal]
    )
    own = [(f"dialogue:support/{c}",) * 2 for c in ("c1", "c2", "c3")]
    evidence = dialogue_units.unit_evidence(bronze, SETTINGS)["people_groups"].collect()
    assert sorted(evidence.rows()) == own
    whole = u.transform(SOURCE, bronze, SETTINGS)["episodes"]
    assert sorted(whole.select("episode_id", "group_id").rows()) == own


def test_groups_and_prompts_read_the_kept_conversations_the_plan_collected_once():
    """The plan deduplicates the corpus's conversations once (`collect_shared`) for the evidence,
    the groups (without `link_raters`) and the prompts: with them these are what they derive
    without them, and they are what they read."""
    off = replace(SETTINGS, splits=replace(SETTINGS.splits, link_raters=False))
    bronze = _tiny_bronze()

    def groups_and_prompts(given: dict) -> tuple[list, list]:
        groups = dialogue_units.unit_groups(given, off, {}).collect().sort("unit").rows()
        prompts = dialogue_units.unit_prompts(given, off).collect().sort("unit")
        return groups, prompts.get_column("unit").to_list()

    derived = groups_and_prompts(bronze)
    ids = [f"dialogue:support/c{i}" for i in (1, 2, 3)]
    assert derived == ([(i, i, 1) for i in ids], ids)
    shared = u.collect_shared(SOURCE, bronze, off)
    assert groups_and_prompts({**bronze, **shared}) == derived
    only_c2 = shared[dialogue_units.KEPT].filter(pl.col("conversation_id") == "c2")
    told = groups_and_prompts({**bronze, dialogue_units.KEPT: only_c2})
    assert told == ([(ids[1], ids[1], 1)], [ids[1]])
