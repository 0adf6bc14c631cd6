"""Trainability checks on tiny hand-made frames: each problem kind is found, a clean frame has none.

Every test breaks exactly one rule of DESIGN §5 "What a trainer can rely on" in an otherwise clean
frame, so it fails if that one detection is removed."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.release.build.request import ReleaseRequest
from pipelines.release.store.files import MANIFEST
from pipelines.release.trainability.folder import trainability_problems
from pipelines.release.trainability.problems import (
    UntrainableRelease,
    broken_chats,
    chat_shape_problems,
    kto_label_problems,
    outcome_sign_problems,
    preference_problems,
    ranked_problems,
    rlds_problems,
)
from pipelines.release.write import content_hash, write_release
from tests.unit._staged import staged

MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))


def chat(*roles: str) -> list[dict]:
    return [{"role": r, "content": f"{r} text"} for r in roles]


# ---------------------------------------------------------------- rl_steps


def steps(rows: list[tuple[str, int, bool, bool, bool, str]]) -> pl.DataFrame:
    """rows of (episode_id, step, is_first, is_last, is_terminal, split); discount 0 on terminal."""
    return pl.DataFrame(
        [
            {
                "episode_id": e,
                "step": s,
                "is_first": f,
                "is_last": la,
                "is_terminal": t,
                "discount": 0.0 if t else 1.0,
                "split": sp,
            }
            for e, s, f, la, t, sp in rows
        ]
    )


WHOLE = [
    ("e1", 0, True, False, False, "test"),
    ("e1", 1, False, False, False, "test"),
    ("e1", 2, False, True, True, "test"),
    ("e2", 0, True, True, False, "train"),
]


def test_whole_episodes_have_no_rlds_problem():
    assert rlds_problems(steps(WHOLE)) == []


def test_an_episode_that_lost_its_first_step_is_reported():
    cut = [r for r in WHOLE if (r[0], r[1]) != ("e1", 0)]  # what cross-split dedup used to do
    problems = rlds_problems(steps(cut))
    assert any("steps not 0..n-1" in p and "e1" in p for p in problems)
    assert any("is_first" in p for p in problems)


def test_a_gap_in_the_steps_is_reported():
    gap = [r for r in WHOLE if (r[0], r[1]) != ("e1", 1)]
    assert [p for p in rlds_problems(steps(gap)) if "steps not 0..n-1" in p]


def test_two_is_last_in_one_episode_are_reported():
    rows = [("e1", 0, True, True, False, "test"), ("e1", 1, False, True, False, "test")]
    assert [p for p in rlds_problems(steps(rows)) if "is_last" in p]


def test_is_terminal_before_the_last_step_is_reported():
    rows = [("e1", 0, True, False, True, "test"), ("e1", 1, False, True, False, "test")]
    assert [p for p in rlds_problems(steps(rows)) if "is_terminal before" in p]


def test_a_terminal_step_with_discount_one_is_reported():
    frame = steps([("e1", 0, True, True, True, "test")]).with_columns(discount=pl.lit(1.0))
    assert [p for p in rlds_problems(frame) if "discount" in p]


def test_an_episode_in_two_splits_is_reported():
    rows = [("e1", 0, True, False, False, "train"), ("e1", 1, False, True, False, "test")]
    assert rlds_problems(steps(rows)) == [
        "rl_steps: 1 episodes in more than one split, e.g. ['e1']"
    ]


# ---------------------------------------------------------------- chat shape


@pytest.mark.parametrize(
    "roles",
    [
        ("user", "assistant"),
        ("system", "user", "assistant"),
        ("user", "assistant", "user", "assistant"),
    ],
)
def test_a_well_formed_chat_is_not_broken(roles):
    assert broken_chats(pl.Series([chat(*roles)], dtype=MESSAGES)).to_list() == [False]


@pytest.mark.parametrize(
    "roles",
    [
        ("assistant", "user", "assistant"),  # the study operator speaks first
        ("user", "user", "assistant"),  # two turns of one role
        ("user", "assistant", "assistant"),
        ("user", "assistant", "user"),  # does not end with the assistant
        ("system", "system", "user", "assistant"),  # two system messages
        ("user", "system", "assistant"),  # a system message after the first turn
        ("user", "agent"),  # a role no template knows
        ("system", "assistant"),  # no user turn
        (),
    ],
)
def test_a_chat_a_strict_template_rejects_is_broken(roles):
    assert broken_chats(pl.Series([chat(*roles)], dtype=MESSAGES)).to_list() == [True]


def test_a_message_without_text_is_broken():
    row = [{"role": "user", "content": None}, {"role": "assistant", "content": "a"}]
    assert broken_chats(pl.Series([row], dtype=MESSAGES)).to_list() == [True]


def test_sft_rows_are_checked_on_their_messages():
    sft = pl.DataFrame(
        {
            "messages": [chat("user", "assistant"), chat("assistant", "user", "assistant")],
            "turn_id": ["t-ok", "t-bad"],
        },
        schema_overrides={"messages": MESSAGES},
    )
    (problem,) = chat_shape_problems("sft", sft, None, ("messages",))
    assert problem.startswith("sft: 1 rows") and "t-bad" in problem


def test_kto_prompt_and_completion_are_checked_as_one_chat():
    kto = pl.DataFrame(
        {"prompt": [chat("user", "assistant")], "completion": [chat("assistant")]},
        schema_overrides={"prompt": MESSAGES, "completion": MESSAGES},
    )
    (problem,) = chat_shape_problems("kto", kto, "prompt", ("completion",))
    assert "prompt + completion" in problem


def test_each_preference_side_is_checked_with_the_prompt():
    pref = pl.DataFrame(
        {
            "prompt": [chat("user")],
            "chosen": [chat("assistant")],
            "rejected": [chat("user", "assistant")],
        },
        schema_overrides={"prompt": MESSAGES, "chosen": MESSAGES, "rejected": MESSAGES},
    )
    (problem,) = chat_shape_problems("preference", pref, "prompt", ("chosen", "rejected"))
    assert "prompt + rejected" in problem


# ---------------------------------------------------------------- preference


def pairs(**columns) -> pl.DataFrame:
    return pl.DataFrame({"chosen_turn_id": ["p1"], **{k: [v] for k, v in columns.items()}})


def test_a_pair_preferring_the_lower_reward_is_reported():
    assert preference_problems(pairs(reward_chosen=-0.5, reward_rejected=0.5)) == [
        "preference: 1 rows preferring the answer with the lower known reward, e.g. ['p1']"
    ]
    assert preference_problems(pairs(reward_chosen=0.5, reward_rejected=-0.5)) == []


def test_an_unknown_reward_is_no_preference_problem():
    frame = pairs(reward_chosen=None, reward_rejected=0.5).with_columns(
        pl.col("reward_chosen").cast(pl.Float64)
    )
    assert preference_problems(frame) == []


def test_chosen_and_rejected_answering_different_prompts_is_reported():
    (problem,) = preference_problems(pairs(chosen_prompt_hash="a", rejected_prompt_hash="b"))
    assert "different prompts" in problem
    assert preference_problems(pairs(chosen_prompt_hash="a", rejected_prompt_hash="a")) == []


# ---------------------------------------------------------------- kto, outcomes


def kto(rows: list[tuple[float | None, bool | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "turn_id": [f"t{i}" for i in range(len(rows))],
            "reward": [r for r, _ in rows],
            "label": [la for _, la in rows],
        },
        schema={"turn_id": pl.String, "reward": pl.Float64, "label": pl.Boolean},
    )


def test_kto_label_equal_to_the_sign_of_the_reward_has_no_problem():
    assert kto_label_problems(kto([(0.8, True), (-0.8, False)]), include_neutral=False) == []


def test_a_kto_label_against_the_sign_of_the_reward_is_reported():
    (problem,) = kto_label_problems(kto([(0.8, True), (-0.5, True)]), include_neutral=False)
    assert problem == "kto: 1 rows whose label is not the sign of the reward, e.g. ['t1']"


def test_a_neutral_kto_row_is_reported_unless_neutral_rows_are_on():
    rows = kto([(0.0, False)])
    assert [p for p in kto_label_problems(rows, include_neutral=False) if "reward 0" in p]
    assert kto_label_problems(rows, include_neutral=True) == []
    assert [
        p for p in kto_label_problems(kto([(0.0, True)]), include_neutral=True) if "desirable" in p
    ]


def test_a_kto_row_without_reward_is_reported():
    assert [
        p
        for p in kto_label_problems(kto([(None, False)]), include_neutral=False)
        if "without a reward" in p
    ]


def test_a_reward_against_its_outcome_is_reported():
    decisions = pl.DataFrame(
        {
            "decision_id": ["d1", "d2", "d3"],
            "outcome_reward": [1.0, -1.0, 1.0],
            "outcome_was_good": [False, False, None],
        }
    )
    assert outcome_sign_problems("decisions", decisions) == [
        (
            "decisions: 1 rows whose outcome_reward has the opposite sign of outcome_was_good, "
            "e.g. ['d1']"
        )
    ]
    rows = kto([(1.0, True)]).with_columns(outcome_was_good=pl.lit(False))
    assert [p for _, p in ranked_problems("kto", rows, False) if "opposite sign" in p]


# ---------------------------------------------------------------- on a release's files, blocking


def _request(kto_rows: pl.DataFrame, neutral: bool, folder: Path) -> ReleaseRequest:
    frame = kto_rows.with_columns(
        split=pl.lit("train"),
        group_id=pl.lit("g"),
        episode_id=pl.lit("e"),
        prompt_hash=pl.lit("h"),
        prompt=pl.lit(chat("user"), dtype=MESSAGES),
        completion=pl.lit(chat("assistant"), dtype=MESSAGES),
    )
    return ReleaseRequest(
        staged({"kto": frame}, folder),
        {"salt": "s"},
        {"release": {"kto_include_neutral": neutral}},
        [],
        "0.1.0",
        "abc",
    )


def test_the_release_setting_for_neutral_kto_rows_is_read_from_the_manifest(tmp_path):
    for neutral in (False, True):
        request = _request(kto([(0.0, False)]), neutral, tmp_path / f"staged-{neutral}")
        path = write_release(
            tmp_path / str(neutral), "20261121-0000000000", content_hash(request), request
        )
        assert bool(trainability_problems(path)) is not neutral
        assert (
            orjson.loads((path / MANIFEST).read_bytes())["config"]["release"]["kto_include_neutral"]
            is neutral
        )


def test_a_failing_check_publishes_nothing(tmp_path):
    def check(folder, _sha256, _previous):
        problems = trainability_problems(folder)
        if problems:
            raise UntrainableRelease("; ".join(problems))

    exports = tmp_path / "exports"
    request = _request(kto([(0.5, False)]), neutral=False, folder=tmp_path / "staged")
    with pytest.raises(UntrainableRelease, match="label is not the sign"):
        write_release(exports, "20261121-0000000000", content_hash(request), request, check=check)
    assert list(exports.iterdir()) == []  # no version, no temporary folder, no LATEST


# ---------------------------------------------------------------- one file at a time


def test_problems_read_file_by_file_merge_to_those_of_the_whole_release(tmp_path):
    """A release is checked one file at a time (release/trainability/folder.py): counts add up
    over files, the first examples in file order are named, and an episode split over two files is
    whole."""
    (tmp_path / "kto").mkdir()
    (tmp_path / "rl_steps").mkdir()
    files = [
        # t1: label against its reward
        {"turn_id": ["t1", "t2"], "reward": [0.5, -0.5], "label": [False, False]},
        # t3, t4: label against their reward; t5: no reward
        {"turn_id": ["t3", "t4", "t5"], "reward": [-1.0, 1.0, None], "label": [True, False, True]},
    ]
    for i, columns in enumerate(files):
        n = len(columns["turn_id"])
        chats = {"prompt": [chat("user")] * n, "completion": [chat("assistant")] * n}
        frame = pl.DataFrame(columns | chats | {"split": ["train"] * n})
        frame.write_parquet(tmp_path / "kto" / f"train-b0000{i}.parquet")
    steps(WHOLE[:2]).write_parquet(tmp_path / "rl_steps" / "test-b00000-00000-of-00002.parquet")
    steps(WHOLE[2:]).write_parquet(tmp_path / "rl_steps" / "test-b00000-00001-of-00002.parquet")
    assert trainability_problems(tmp_path) == [
        "kto: 1 rows without a reward (the label cannot be its sign), e.g. ['t5']",
        "kto: 3 rows whose label is not the sign of the reward, e.g. ['t1', 't3', 't4']",
    ]
