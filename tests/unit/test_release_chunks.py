"""How a release partition's episodes are cut into chunks (pipelines/release/build/chunking.py):
atoms, sticky chunks, and the guard for rows that name another atom's turn."""

from datetime import datetime

import polars as pl

from pipelines.release.build import chunking
from pipelines.release.build.chunking import ATOM, CHUNK


def _episodes(rows: list[tuple[str, str, str, int]]) -> pl.DataFrame:
    """(episode_id, source, attributes, day of June 2024 it started)."""
    return pl.DataFrame(
        [(e, s, a, datetime(2024, 6, d)) for e, s, a, d in rows],
        schema=["episode_id", "source", "attributes", "started_at"],
        orient="row",
    )


def test_the_rounds_of_a_social_rl_run_are_one_atom_and_other_episodes_their_own():
    episodes = _episodes(
        [
            ("social_rl:r1#1", "social_rl", '{"run_dir": "r1"}', 1),
            ("social_rl:r1#2", "social_rl", '{"run_dir": "r1"}', 1),
            ("social_rl:r2#1", "social_rl", "{}", 1),
            ("dialogue:a", "dialogue", '{"run_dir": "r1"}', 1),
        ]
    )
    atoms = dict(chunking.atoms(episodes).iter_rows())
    assert atoms == {
        "social_rl:r1#1": "run\x1fr1",
        "social_rl:r1#2": "run\x1fr1",
        "social_rl:r2#1": "run\x1fsocial_rl:r2#1",  # no run folder: the episode is its run
        "dialogue:a": "dialogue:a",
    }


def test_known_atoms_keep_their_chunk_and_new_ones_fill_new_chunks_in_start_order(monkeypatch):
    monkeypatch.setattr(chunking, "CHUNK_ROWS", 10)
    episodes = _episodes(
        [
            ("a", "dialogue", "{}", 9),
            ("b", "dialogue", "{}", 1),
            ("new-late", "dialogue", "{}", 8),
            ("new-early", "dialogue", "{}", 2),
            ("new-mid", "dialogue", "{}", 5),
        ]
    )
    of = chunking.atoms(episodes)
    # silver rows per episode; each atom counts one more (5 each)
    rows = pl.DataFrame(
        {"episode_id": ["a", "b", "new-late", "new-early", "new-mid"], "n": [4] * 5}
    )
    previous = pl.DataFrame({ATOM: ["a", "b", "gone"], CHUNK: [3, 0, 1]})
    chunks = dict(chunking.assign(of, episodes, rows, previous).select(ATOM, CHUNK).iter_rows())
    # by hand: a and b stay; new atoms by start (early, mid, late) at row offsets 0, 5, 10 of
    # chunks of 10 rows after the last known chunk 3: 4, 4, 5
    assert chunks == {"a": 3, "b": 0, "new-early": 4, "new-mid": 4, "new-late": 5}


def test_a_first_cut_puts_atoms_in_start_order_into_chunks_of_about_chunk_rows(monkeypatch):
    monkeypatch.setattr(chunking, "CHUNK_ROWS", 10)
    episodes = _episodes([("x", "dialogue", "{}", 3), ("y", "dialogue", "{}", 1)])
    of = chunking.atoms(episodes)
    rows = pl.DataFrame({"episode_id": ["x", "y"], "n": [20, 1]})
    chunks = dict(chunking.assign(of, episodes, rows, None).select(ATOM, CHUNK).iter_rows())
    assert chunks == {"y": 0, "x": 0}  # by hand: offsets 0 and 2, both under 10


def _tables(decision_turn: str, revises: str | None) -> tuple[dict, dict]:
    turns = pl.DataFrame(
        {
            "episode_id": ["e1", "e2"],
            "turn_id": ["e1#0", "e2#0"],
            "attributes": [
                "{}",
                "{}" if revises is None else f'{{"revises_turn_id": "{revises}"}}',
            ],
        }
    )
    decisions = pl.DataFrame(
        {"episode_id": ["e1"], "decision_id": ["d1"], "turn_id": [decision_turn]}
    )
    feedback = pl.DataFrame(
        {"episode_id": ["e1"], "decision_id": ["d1"]},
        schema={"episode_id": pl.String, "decision_id": pl.String},
    )
    rewards = pl.DataFrame({"episode_id": ["e2"], "turn_id": ["e2#0"], "decision_id": [None]})
    silver = {"turns": turns, "decisions": decisions, "feedback": feedback}
    return silver, {"turn_rewards": rewards.cast({"decision_id": pl.String})}


def test_a_row_naming_a_turn_of_another_atom_makes_the_partition_one_chunk():
    episodes = _episodes([("e1", "decision", "{}", 1), ("e2", "scenario", "{}", 1)])
    of = chunking.atoms(episodes)
    assert not chunking.crosses(*_tables("e1#0", None), of)
    assert chunking.crosses(*_tables("e2#0", None), of)  # e1's decision names e2's turn
    assert chunking.crosses(*_tables("e1#0", "e1#0"), of)  # e2's turn revises e1's
