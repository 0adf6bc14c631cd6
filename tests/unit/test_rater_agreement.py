"""Several raters on one target: n_raters and spread in gold, Krippendorff's alpha per score name,
and the release's label minimum — each against values worked out by hand here."""

from __future__ import annotations

import numpy as np
import orjson
import polars as pl
import pytest

from pipelines.config.scores import load_scores
from pipelines.exports.datasets import build_datasets
from pipelines.exports.datasets.common import DatasetOptions
from pipelines.gold.agreement import agreement, krippendorff_alpha
from pipelines.gold.rules import run_rule
from pipelines.release.build.request import ReleaseRequest
from pipelines.release.card.agreement import agreement_section
from pipelines.release.store.files import read_manifest
from pipelines.release.write import content_hash, write_release
from tests.unit._export_helpers import all_train, episode, reward, tables, turn
from tests.unit._gold_helpers import params, silver_frame, silver_tables
from tests.unit._staged import staged

EP = "dialogue:d/c"
T = f"{EP}#1"


def _fb(fid, name, value, *, turn=T, scale="[-1,1]", text=None, attributes=None, **extra):
    return {
        "feedback_id": fid,
        "episode_id": extra.pop("episode", EP),
        "turn_id": turn,
        "target": extra.pop("target", "turn"),
        "name": name,
        "value_num": value,
        "value_text": text,
        "scale": scale,
        "source_kind": "human",
        "attributes": orjson.dumps(attributes).decode() if attributes else None,
        **extra,
    }


def _user(uid: str) -> dict:
    return {"extra": {"user_id": uid}}


def _assistant_turn(tid=T, episode=EP):
    return {"turn_id": tid, "episode_id": episode, "turn_index": 1, "role": "assistant"}


# ---------------------------------------------------------------- Krippendorff's alpha by hand


def _as_counts(matrix: list[list[float | None]]) -> pl.DataFrame:
    """Raters × items (None: not rated) → item, value, count (raters who gave it that value)."""
    cells: dict[tuple[str, str], int] = {}
    for ratings in matrix:
        for item, value in enumerate(ratings):
            if value is not None:
                cells[str(item), str(value)] = cells.get((str(item), str(value)), 0) + 1
    return pl.DataFrame(
        [(item, value, n) for (item, value), n in cells.items()],
        schema={"item": pl.String, "value": pl.String, "count": pl.Int64},
        orient="row",
    )


def test_nominal_alpha_of_a_tiny_matrix_is_the_hand_computed_four_ninths():
    # Items (a, a), (a, b), (b, b). Coincidences (each pair weighted 1/(m−1) = 1): o_aa = 2,
    # o_ab = o_ba = 1, o_bb = 2; n_a = n_b = 3, n = 6.
    # D_o = (o_ab + o_ba) / n = 2/6; D_e = 2·n_a·n_b / (n(n−1)) = 18/30; α = 1 − D_o/D_e = 4/9.
    counts = _as_counts([["a", "a", "b"], ["a", "b", "b"]])
    assert krippendorff_alpha(counts, "nominal") == pytest.approx(4 / 9)


def test_interval_alpha_of_a_tiny_matrix_is_the_hand_computed_eight_elevenths():
    # Items (1, 2), (3, 3). D_o = Σ_items Σ_ordered pairs (x−y)² / (m−1) / n = (1 + 1)/4 = 1/2.
    # D_e over the ordered pairs of the 4 values 1, 2, 3, 3: 2·(1 + 4 + 4 + 1 + 1 + 0) / (4·3)
    # = 22/12. α = 1 − (1/2)/(22/12) = 1 − 3/11 = 8/11.
    counts = _as_counts([[1.0, 3.0], [2.0, 3.0]])
    assert krippendorff_alpha(counts, "interval") == pytest.approx(8 / 11)


def test_alpha_of_the_2011_papers_worked_example_is_what_the_paper_gives():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: 4 observers,
    # 12 units, missing values. The paper gives α_nominal = 0.743, α_ordinal = 0.815,
    # α_interval = 0.849 and α_ratio = 0.797.
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
    c = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
    counts = _as_counts([a, b, c, d])
    assert round(krippendorff_alpha(counts, "nominal"), 3) == 0.743
    assert round(krippendorff_alpha(counts, "ordinal"), 3) == 0.815
    assert round(krippendorff_alpha(counts, "interval"), 3) == 0.849
    assert round(krippendorff_alpha(counts, "ratio"), 3) == 0.797


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_equals_the_reference_packages_on_random_ratings(level):
    # The `krippendorff` package (a dev dependency: the reference, not used by the engine),
    # on 300 items × up to 5 raters with missing ratings and zeros (ratio's 0/0 pairs).
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(7)
    values = rng.integers(0, 9, size=(5, 300)).astype(float)
    values[rng.random(values.shape) < 0.35] = np.nan
    matrix = [[None if np.isnan(v) else float(v) for v in row] for row in values]
    expected = krippendorff.alpha(values, level_of_measurement=level)
    assert krippendorff_alpha(_as_counts(matrix), level) == pytest.approx(expected, rel=1e-9)


def _row(table, name, level):
    (row,) = [r for r in table.iter_rows(named=True) if (r["name"], r["level"]) == (name, level)]
    return row


def test_agreement_takes_items_rated_twice_from_feedback_and_names_why_others_are_not_computable():
    turns = [f"{EP}#{i}" for i in (1, 2, 3)]
    # the nominal example above as dialogue thumbs of two users: (+1, +1), (+1, −1), (−1, −1);
    # a third turn rated once (not pairable) and user u1 rating turn 1 twice (the last counts)
    feedback = silver_frame(
        "feedback",
        [
            _fb("r1", "rating", -1.0, turn=turns[0], attributes=_user("u1"), observed_at=None),
            _fb("r2", "rating", 1.0, turn=turns[0], attributes=_user("u1")),
            _fb("r3", "rating", 1.0, turn=turns[0], attributes=_user("u2")),
            _fb("r4", "rating", 1.0, turn=turns[1], attributes=_user("u1")),
            _fb("r5", "rating", -1.0, turn=turns[1], attributes=_user("u2")),
            _fb("r6", "rating", -1.0, turn=turns[2], attributes=_user("u1")),
            _fb("r7", "rating", -1.0, turn=turns[2], attributes=_user("u2")),
            _fb("r8", "rating", 1.0, turn=f"{EP}#4", attributes=_user("u1")),
            _fb("s1", "reward", 0.5, turn=turns[0], attributes=_user("u1")),
            _fb("o1", "label", 0.75, scale="[0,1]", text="quality", attributes={"count": 3}),
        ],
    )
    table = agreement(feedback, load_scores())
    rating = _row(table, "rating", "interval")
    # ±1 on [-1, 1] put on [0, 1] is 1 / 0: two values, so interval α equals the nominal 4/9
    assert rating["alpha"] == pytest.approx(4 / 9)
    assert (rating["n_items"], rating["n_ratings"], rating["max_raters"]) == (3, 6, 2)
    assert rating["status"] == "computed"
    assert _row(table, "reward", "interval")["reason"] == (
        "no item has ratings from 2 or more raters"
    )
    assert _row(table, "label", "ratio")["reason"] == (
        "the source records only the mean of its raters"
    )
    assert _row(table, "comment", None)["reason"] == "free text has no level of measurement"
    assert _row(table, "reward", "interval")["alpha"] is None


@pytest.mark.parametrize(
    ("attributes", "why_label"),
    [
        # the key spelled with an escape is still the key `count`
        ('{"\\u0063ount": 3}', "the source records only the mean of its raters"),
        # "count" as a value, and a `count` key nested deeper, are not the mean's key
        ('{"note": "count", "by": {"count": 3}}', "no item has ratings from 2 or more raters"),
    ],
)
def test_only_a_top_level_count_key_marks_a_name_as_a_mean_of_raters(attributes, why_label):
    row = _fb("o1", "label", 0.75, scale="[0,1]", text="quality") | {"attributes": attributes}
    table = agreement(silver_frame("feedback", [row]), load_scores())
    assert _row(table, "label", "ratio")["reason"] == why_label


def test_agreement_of_feedback_in_parts_holding_their_episodes_is_that_of_the_whole():
    # the nominal example above (α = 4/9), its items in two episodes read as two parts; the
    # label that records only its raters' mean in the second part
    other = "dialogue:d/other"
    part_a = silver_frame(
        "feedback",
        [
            _fb("r1", "rating", 1.0, turn=f"{EP}#1", attributes=_user("u1")),
            _fb("r2", "rating", 1.0, turn=f"{EP}#1", attributes=_user("u2")),
            _fb("r3", "rating", 1.0, turn=f"{EP}#2", attributes=_user("u1")),
            _fb("r4", "rating", -1.0, turn=f"{EP}#2", attributes=_user("u2")),
        ],
    )
    part_b = silver_frame(
        "feedback",
        [
            _fb("r5", "rating", -1.0, turn=f"{other}#1", episode=other, attributes=_user("u1")),
            _fb("r6", "rating", -1.0, turn=f"{other}#1", episode=other, attributes=_user("u2")),
            _fb(
                "o1", "label", 0.75, scale="[0,1]", text="q", episode=other, attributes={"count": 3}
            ),
        ],
    )
    table = agreement([part_a, part_b.lazy()], load_scores())
    rating = _row(table, "rating", "interval")
    assert rating["alpha"] == pytest.approx(4 / 9)
    assert (rating["n_items"], rating["n_ratings"]) == (3, 6)
    assert _row(table, "label", "ratio")["reason"] == (
        "the source records only the mean of its raters"
    )


def test_emoji_tallies_are_nominal_votes_and_one_value_everywhere_is_not_computable():
    oasst = "oasst:t1"
    emoji = [
        # message m1: 2 × +1, 1 × −1; m2: 2 × −1. Votes +1 +1 −1 | −1 −1; _skip_reply is no vote.
        _fb("e1", "emoji", 2.0, turn="m1", scale="count", text="+1", episode=oasst),
        _fb("e2", "emoji", 1.0, turn="m1", scale="count", text="-1", episode=oasst),
        _fb("e3", "emoji", 2.0, turn="m2", scale="count", text="-1", episode=oasst),
        _fb("e4", "emoji", 5.0, turn="m2", scale="count", text="_skip_reply", episode=oasst),
    ]
    # Coincidences: m1 (m=3, weight 1/2): o(+,+) = 2·1/2 = 1, o(+,−) = o(−,+) = 2·1/2 = 1;
    # m2 (m=2): o(−,−) = 2. n+ = 2, n− = 3, n = 5. D_o = 2/5; D_e = 2·2·3/(5·4) = 12/20.
    # α = 1 − (2/5)/(12/20) = 1 − 2/3 = 1/3.
    table = agreement(silver_frame("feedback", emoji), load_scores())
    row = _row(table, "emoji", "nominal")
    assert row["alpha"] == pytest.approx(1 / 3)
    assert (row["n_items"], row["n_ratings"], row["max_raters"]) == (2, 5, 3)
    also_down = _fb("e5", "emoji", 3.0, turn="m3", scale="count", text="-1", episode=oasst)
    same = silver_frame("feedback", [emoji[2], also_down])
    row = _row(agreement(same, load_scores()), "emoji", "nominal")
    assert row["alpha"] is None
    assert row["reason"] == "every rating has the same value (alpha is 0/0)"


# ---------------------------------------------------------------- n_raters and spread in gold


def test_dialogue_reward_keeps_its_raters_and_their_standard_deviation():
    silver = silver_tables(
        turns=[_assistant_turn()],
        feedback=[
            _fb("dialogue:e1:rating", "rating", 1.0, attributes=_user("u1")),
            _fb("dialogue:e2:rating", "rating", 1.0, attributes=_user("u2")),
            _fb("dialogue:e3:rating", "rating", -1.0, attributes=_user("u3")),
        ],
    )
    row = run_rule("dialogue_feedback@1", silver, params()).row(0, named=True)
    # values 0.8, 0.8, −0.8: mean 0.8/3; population std = 0.8·√(8/9)
    assert row["n_raters"] == 3 and row["aggregation"] == "mean"
    assert row["rater_spread"] == pytest.approx(0.8 * (8 / 9) ** 0.5)
    assert row["spread_measure"] == "std"


def test_one_user_rating_twice_is_one_rater():
    silver = silver_tables(
        turns=[_assistant_turn()],
        feedback=[
            _fb("dialogue:e1:rating", "rating", 1.0, attributes=_user("u1")),
            _fb("dialogue:e2:rating", "rating", 1.0, attributes=_user("u1")),
        ],
    )
    row = run_rule("dialogue_feedback@1", silver, params()).row(0, named=True)
    assert (row["n_signals"], row["n_raters"], row["rater_spread"]) == (2, 1, 0.0)


def test_decision_verdicts_of_two_rater_kinds_keep_the_majority_share():
    ep, dec = "decision:s1", "decision:s1/d1"
    verdict = {
        "episode": ep,
        "target": "decision",
        "turn": None,
        "decision_id": dec,
        "scale": "bool",
    }
    silver = silver_tables(
        feedback=[
            _fb("v1", "was_good_decision", 1.0, attributes={"rated_by": "user"}, **verdict),
            _fb("v2", "was_good_decision", 0.0, attributes={"rated_by": "System"}, **verdict),
        ],
        decisions=[{"decision_id": dec, "episode_id": ep}],
    )
    row = run_rule("decision_outcome@2", silver, params()).row(0, named=True)
    # +1 and −1: one of two raters on each side
    assert (row["n_raters"], row["rater_spread"], row["spread_measure"]) == (
        2,
        0.5,
        "majority_share",
    )


def test_oasst_emoji_votes_count_their_readers_and_a_label_its_reviewers():
    oasst = "oasst:t1"
    turns = [_assistant_turn("oasst:m1", oasst), _assistant_turn("oasst:m2", oasst)]
    votes = {"turn": "oasst:m1", "scale": "count", "episode": oasst}
    silver = silver_tables(
        turns=turns,
        feedback=[
            _fb("e1", "emoji", 2.0, text="+1", **votes),
            _fb("e2", "emoji", 1.0, text="-1", **votes),
            _fb("e3", "emoji", 1.0, text="red_flag", **votes),
            _fb("e4", "emoji", 4.0, text="_skip_reply", **votes),
            _fb(
                "l1",
                "label",
                0.75,
                turn="oasst:m2",
                scale="[0,1]",
                text="quality",
                attributes={"count": 3},
                episode=oasst,
            ),
        ],
    )
    rows = {
        r["target_id"]: r
        for r in run_rule("oasst_feedback@1", silver, params()).iter_rows(named=True)
    }
    # m1: 4 valued votes (skip markers are none), +1 +1 against −1 and a red flag (−1): 2 of 4
    assert (rows["oasst:m1"]["n_raters"], rows["oasst:m1"]["rater_spread"]) == (4, 0.5)
    assert rows["oasst:m1"]["spread_measure"] == "majority_share"
    assert rows["oasst:m1"]["aggregation"] == "weighted_mean"
    # m2: OASST keeps 3 reviewers' mean only
    assert (rows["oasst:m2"]["n_raters"], rows["oasst:m2"]["rater_spread"]) == (3, None)
    assert rows["oasst:m2"]["aggregation"] == "mean"


# ---------------------------------------------------------------- the release's label minimum

D = "dialogue:d/1"


def _rated_dialogue(n_raters: int, spread: float) -> tuple[dict, dict]:
    return tables(
        gold={
            "turn_rewards": [
                reward(
                    "turn",
                    f"{D}#2",
                    D,
                    0.8,
                    "dialogue_feedback@1",
                    turn_id=f"{D}#2",
                    n_raters=n_raters,
                    rater_spread=spread,
                    spread_measure="std",
                ),
                # a judge-style reward: no raters, never held to the minimum
                reward("turn", f"{D}#4", D, 0.5, "other@1", turn_id=f"{D}#4"),
            ]
        },
        episodes=[episode(D, "dialogue")],
        turns=[
            turn(D, 1, "user", "hi"),
            turn(D, 2, "assistant", "hello"),
            turn(D, 3, "user", "more"),
            turn(D, 4, "assistant", "sure"),
        ],
    )


def _kto_rewards(options: DatasetOptions, n_raters: int, spread: float) -> tuple[list, dict]:
    silver, gold = _rated_dialogue(n_raters, spread)
    left_out: dict = {}
    kto = build_datasets(silver, gold, all_train(silver), options, left_out)["kto"]
    return sorted(kto["reward"].to_list()), left_out


def test_without_a_minimum_every_label_is_released_and_nothing_is_counted():
    rewards, left_out = _kto_rewards(DatasetOptions(), 1, 0.0)
    assert rewards == [0.5, 0.8] and "labels" not in left_out
    assert "min_raters" not in DatasetOptions().record()  # the release config is as before


def test_a_label_with_too_few_raters_is_left_out_and_counted():
    rewards, left_out = _kto_rewards(DatasetOptions(min_raters=2), 1, 0.0)
    assert rewards == [0.5]
    assert left_out["labels"] == {
        "below_min_raters": 1,
        "agreement_not_recorded": 0,
        "below_min_agreement": 0,
    }
    assert _kto_rewards(DatasetOptions(min_raters=2), 2, 0.0)[0] == [0.5, 0.8]


def test_a_label_whose_raters_disagree_is_left_out_and_counted():
    # std 0.5 of values in [-1, 1] is agreement 1 − 0.5 = 0.5
    rewards, left_out = _kto_rewards(DatasetOptions(min_label_agreement=0.6), 3, 0.5)
    assert rewards == [0.5]
    assert left_out["labels"]["below_min_agreement"] == 1
    assert _kto_rewards(DatasetOptions(min_label_agreement=0.5), 3, 0.5)[0] == [0.5, 0.8]


def test_the_card_states_alpha_the_names_not_computable_and_the_minimum_with_its_counts():
    rows = [
        {
            "name": "emoji",
            "level": "nominal",
            "alpha": 1 / 3,
            "n_items": 2,
            "n_ratings": 5,
            "max_raters": 3,
            "status": "computed",
            "reason": None,
        },
        {
            "name": "judge_stance",
            "level": "nominal",
            "alpha": None,
            "n_items": 0,
            "n_ratings": 0,
            "max_raters": 0,
            "status": "not computable",
            "reason": "no item has ratings from 2 or more raters",
        },
    ]
    proof = {"left_out": {"labels": {"below_min_raters": 7, "below_min_agreement": 2}}}
    text = agreement_section(rows, {"min_raters": 2, "min_label_agreement": 0.6}, proof)
    assert "| `emoji` | nominal | 0.333 | 2 | 5 | 3 |" in text
    assert "- no item has ratings from 2 or more raters: `judge_stance`" in text
    assert "at least 2 raters, agreement at least 0.6" in text
    assert "7 below the raters minimum, 2 below the agreement minimum" in text
    assert "No label minimum" in agreement_section(rows, {}, {})


def test_a_written_release_records_the_agreement_and_the_labels_left_out(tmp_path):
    frame = pl.DataFrame(
        {
            "messages": [[{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]],
            "split": ["train"],
            "group_id": ["g1"],
            "episode_id": ["dialogue:g1"],
            "prompt_hash": ["h-g1"],
        }
    )
    labels = {"below_min_raters": 3, "agreement_not_recorded": 0, "below_min_agreement": 1}
    rows = [
        {
            "name": "emoji",
            "level": "nominal",
            "alpha": 0.5,
            "n_items": 2,
            "n_ratings": 4,
            "max_raters": 2,
            "status": "computed",
            "reason": None,
        }
    ]
    req = ReleaseRequest(
        staged({"sft": frame}, tmp_path / "staged"),
        {"overlaps": {}, "salt": "s", "left_out": {"labels": labels}},
        {"splits": {"salt": "s"}, "release": {"min_raters": 2, "min_label_agreement": 0.6}},
        [],
        "0.1.0",
        "abc",
        agreement=rows,
    )
    path = write_release(tmp_path / "exports", "v1", content_hash(req), req)
    manifest = read_manifest(path)
    assert manifest["labels_left_out"] == labels
    assert manifest["rater_agreement"] == rows
    card = (path / "README.md").read_text()
    assert "3 below the raters minimum, 1 below the agreement minimum" in card


def _thumbs(first: tuple[float, float], second: tuple[float, float]) -> pl.DataFrame:
    """Users u1 and u2 each rating turns 1 and 2 of the dialogue (value pairs per turn)."""
    rows = []
    for index, values in ((1, first), (2, second)):
        for user, value in zip(("u1", "u2"), values, strict=True):
            fid = f"t{index}-{user}"
            rows.append(_fb(fid, "rating", value, turn=f"{EP}#{index}", attributes=_user(user)))
    return silver_frame("feedback", rows)


def test_the_stored_agreement_is_computed_once_and_again_for_new_feedback(tmp_path, monkeypatch):
    from pipelines.gold import agreement as module
    from pipelines.storage import tables as stored
    from pipelines.storage.layout import Layout

    layout = Layout(tmp_path)
    assert module.stored_agreement(layout) is None  # no feedback table yet
    computed = []
    compute = module.agreement
    monkeypatch.setattr(module, "agreement", lambda *a: computed.append(1) or compute(*a))
    # the two users agree on both turns, +1 and −1: no disagreement observed, α = 1
    stored.publish(layout, "silver", {"feedback": _thumbs((1.0, 1.0), (-1.0, -1.0))})
    first = module.stored_agreement(layout)
    again = module.stored_agreement(layout)  # the views after the release: not computed again
    assert _row(first, "rating", "interval")["alpha"] == pytest.approx(1.0)
    assert again is first and len(computed) == 1
    # now they disagree on both: D_o = 4/4 pairs, D_e = 2·2·2 / (4·3) = 2/3, α = 1 − 3/2
    stored.publish(layout, "silver", {"feedback": _thumbs((1.0, -1.0), (-1.0, 1.0))})
    after = module.stored_agreement(layout)
    assert _row(after, "rating", "interval")["alpha"] == pytest.approx(-0.5)
    assert len(computed) == 2
