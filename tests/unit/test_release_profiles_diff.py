"""Release profiles select exactly what they say; the release diff matches rows by identity.
Expected values are worked out by hand from the tiny frames."""

import polars as pl
import pytest

from pipelines.config.names import RELEASED_DATASETS
from pipelines.config.settings import SettingsError, validate_config
from pipelines.release.card.changelog import diff_markdown
from pipelines.release.card.columns import RELEASE_COLUMNS
from pipelines.release.card.diff import (
    ReleaseDiff,
    changed_values,
    keyed_file,
    moved_groups,
    row_changes,
)
from pipelines.release.card.profiles import config_names, profile_frames, select

KTO = pl.DataFrame(
    {
        "split": ["train", "train", "train", "test"],
        "source": ["dialogue", "study", "dialogue", "dialogue"],
        "turn_id": ["t1", "t2", "t3", "t4"],
        "reward": [0.8, 0.9, 0.0, -0.8],
        "label": [True, True, False, False],
    }
)


def test_profile_filters_sources_reward_and_neutral_rows():
    assert select("kto", KTO, {"sources": ["dialogue"]})["turn_id"].to_list() == ["t1", "t3", "t4"]
    assert select("kto", KTO, {"min_reward": 0.0})["turn_id"].to_list() == ["t1", "t2", "t3"]
    assert select("kto", KTO, {"kto_neutral": "drop"})["turn_id"].to_list() == ["t1", "t2", "t4"]


def test_profile_min_reward_keeps_or_drops_rl_episodes_whole():
    steps = pl.DataFrame(
        {
            "split": ["train"] * 5,
            "source": ["study"] * 5,
            "episode_id": ["e1", "e1", "e1", "e2", "e2"],
            "step": [0, 1, 2, 0, 1],
            "reward": [-0.5, 0.0, 1.0, 0.2, -0.4],  # returns: e1 0.5, e2 -0.2
        }
    )
    kept = select("rl_steps", steps, {"min_reward": 0.0})
    assert kept.select("episode_id", "step").rows() == [("e1", 0), ("e1", 1), ("e1", 2)]


def test_profile_requiring_a_margin_keeps_pairs_with_chosen_above_rejected():
    pairs = pl.DataFrame(
        {
            "split": ["train"] * 3,
            "source": ["scenario"] * 3,
            "pair_kind": ["a", "b", "c"],
            "reward_chosen": [0.5, None, 0.3],
            "reward_rejected": [0.1, 0.0, 0.3],
        }
    )
    assert select("preference", pairs, {"require_margin": True})["pair_kind"].to_list() == ["a"]


def test_config_names_one_dataset_is_the_profile_several_are_suffixed():
    assert config_names("p", ["kto"]) == {"kto": "p"}
    assert config_names("p", ["kto", "sft"]) == {"kto": "p-kto", "sft": "p-sft"}
    frames = profile_frames({"kto": KTO}, {"p": {"datasets": ["kto", "sft"]}})
    assert list(frames) == ["p-kto"]  # no sft in this release: no config for it


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ({"sources": ["stduy"]}, "[release.profiles.p] sources: unknown source 'stduy'"),
        ({"datasets": ["dpo"]}, "[release.profiles.p] datasets: unknown dataset 'dpo'"),
        ({"min_reward": 2}, "[release.profiles.p] min_reward: should be less than or equal to 1"),
        ({"min_rewrd": 0}, "[release.profiles.p] min_rewrd: unknown key; allowed: sources"),
        ({"kto_neutral": "keep"}, "kto_neutral = 'keep', but the release leaves reward-0"),
    ],
)
def test_bad_profiles_are_refused_naming_the_key(profile, message):
    with pytest.raises(SettingsError) as err:
        validate_config({"release": {"profiles": {"p": profile}}})
    assert message in str(err.value)


def test_profile_named_like_a_dataset_is_refused():
    with pytest.raises(SettingsError, match="profile 'kto' has the name of a dataset"):
        validate_config({"release": {"profiles": {"kto": {}}}})


def test_a_profile_may_name_exactly_the_datasets_a_release_describes():
    # the settings check profiles against RELEASED_DATASETS, the card describes RELEASE_COLUMNS
    assert RELEASED_DATASETS == (
        *("sft", "preference", "kto", "rl_steps", "decisions", "stepwise", "surveys"),
    )
    assert tuple(RELEASE_COLUMNS) == RELEASED_DATASETS


def test_row_changes_match_rows_by_identity_not_by_counts():
    old = pl.DataFrame(
        {"split": ["train", "train", "test"], "turn_id": ["a", "b", "c"], "reward": [1.0, 0.5, 0.2]}
    )
    # Same counts per split, but b is gone, d is new, c changed reward.
    new = pl.DataFrame(
        {"split": ["train", "train", "test"], "turn_id": ["a", "d", "c"], "reward": [1.0, 0.1, 0.3]}
    )
    assert row_changes("sft", old, new) == [
        {
            "dataset": "sft",
            "split": "test",
            "before": 1,
            "after": 1,
            "added": 0,
            "removed": 0,
            "changed": 1,
            "moved_in": 0,
        },
        {
            "dataset": "sft",
            "split": "train",
            "before": 2,
            "after": 2,
            "added": 1,
            "removed": 1,
            "changed": 0,
            "moved_in": 0,
        },
    ]


def test_a_row_whose_renamed_group_changed_split_is_counted_as_moved_in():
    # c's group g1 became g9 (an earlier unit joined it) and g9 hashes to test: no group moved
    # split, but row c did; a is unchanged, b changed content in place
    old = pl.DataFrame(
        {
            "split": ["train", "train", "train"],
            "turn_id": ["a", "b", "c"],
            "group_id": ["g0", "g0", "g1"],
            "reward": [1.0, 0.5, 0.2],
        }
    )
    new = pl.DataFrame(
        {
            "split": ["train", "train", "test"],
            "turn_id": ["a", "b", "c"],
            "group_id": ["g0", "g0", "g9"],
            "reward": [1.0, 0.7, 0.2],
        }
    )
    rows = row_changes("sft", old, new)
    assert [(r["split"], r["moved_in"], r["added"], r["removed"]) for r in rows] == [
        ("test", 1, 0, 0),
        ("train", 0, 0, 0),
    ]
    assert moved_groups({"sft": old}, {"sft": new}) == []
    text = diff_markdown(ReleaseDiff("v1", "v2", rows=rows))
    assert "| `sft` | test | 0 | 1 | 0 | 0 | 1 | 1 |" in text
    assert "Rows in another split than before: 1" in text


def test_no_moved_rows_no_moved_rows_sentence():
    same = pl.DataFrame({"split": ["train"], "turn_id": ["a"], "group_id": ["g0"]})
    text = diff_markdown(ReleaseDiff("v1", "v2", rows=row_changes("sft", same, same)))
    assert "| `sft` | train | 1 | 1 | 0 | 0 | 0 | 0 |" in text
    assert "Rows in another split" not in text


def test_moved_groups_are_found_across_datasets():
    old = {"sft": pl.DataFrame({"group_id": ["g1", "g2"], "split": ["train", "test"]})}
    new = {"kto": pl.DataFrame({"group_id": ["g1", "g2"], "split": ["train", "train"]})}
    assert moved_groups(old, new) == [{"group_id": "g2", "old_split": "test", "new_split": "train"}]


def test_config_changes_are_listed_by_dotted_key():
    before = {"release": {"kto_include_neutral": False}, "splits": {"salt": "s"}}
    after = {"release": {"kto_include_neutral": True}, "splits": {"salt": "s"}, "x": 1}
    assert changed_values(before, after) == [
        {"key": "release.kto_include_neutral", "before": False, "after": True},
        {"key": "x", "before": None, "after": 1},
    ]


def test_row_changes_from_per_file_key_frames_equal_those_of_the_whole_dataset():
    """A release's files are read one at a time (`keyed_file`); their key frames, concatenated,
    give the changes counted by hand on the whole rows: a nested change is a change, a row id
    repeated across two files is not an identity (its content is)."""
    msgs = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
    old_files = [
        pl.DataFrame(
            {"split": ["train", "train"], "turn_id": ["a", "b"], "messages": [[("u", "hi")], []]},
            schema={"split": pl.String, "turn_id": pl.String, "messages": msgs},
        ),
        pl.DataFrame(
            {"split": ["test"], "turn_id": ["c"], "messages": [[("u", "yo")]]},
            schema={"split": pl.String, "turn_id": pl.String, "messages": msgs},
        ),
    ]
    new_files = [
        pl.DataFrame(  # a: same; b: its message changed
            {
                "split": ["train", "train"],
                "turn_id": ["a", "b"],
                "messages": [[("u", "hi")], [("u", "x")]],
            },
            schema={"split": pl.String, "turn_id": pl.String, "messages": msgs},
        ),
        pl.DataFrame(  # c: unchanged; d: new
            {"split": ["test", "test"], "turn_id": ["c", "d"], "messages": [[("u", "yo")], []]},
            schema={"split": pl.String, "turn_id": pl.String, "messages": msgs},
        ),
    ]
    old = pl.concat([keyed_file("sft", f) for f in old_files])
    new = pl.concat([keyed_file("sft", f) for f in new_files])
    by_split = {r["split"]: r for r in row_changes("sft", old, new)}
    assert by_split["train"] | {"dataset": "sft"} == {
        "dataset": "sft",
        "split": "train",
        "before": 2,
        "after": 2,
        "added": 0,
        "removed": 0,
        "changed": 1,
        "moved_in": 0,
    }
    assert by_split["test"]["before"] == 1 and by_split["test"]["added"] == 1
    assert by_split["test"]["changed"] == 0 and by_split["test"]["removed"] == 0
    # the same rows whole give the same counts
    assert row_changes("sft", pl.concat(old_files), pl.concat(new_files)) == row_changes(
        "sft", old, new
    )
    # the first new file twice: `turn_id` repeats, so it is no identity there and a row is its
    # content: a and b (equal copies, kept once) match none of the old ids (added 2, removed 2)
    repeated = pl.concat([keyed_file("sft", new_files[0]), keyed_file("sft", new_files[0])])
    twice = {r["split"]: r for r in row_changes("sft", old, repeated)}["train"]
    assert (twice["after"], twice["added"], twice["removed"]) == (2, 2, 2)


def test_a_file_two_releases_share_is_read_once_and_a_rewritten_one_is_compared(
    tmp_path, monkeypatch
):
    """The new release hard-links p000 from the old one and rewrote p001 (t3 relabelled, t5 new):
    three files are read, and the changes are those of p001, counted by hand."""
    import os

    from pipelines.release.card import diff

    for release in ("old", "new"):
        (tmp_path / release / "kto").mkdir(parents=True)
    KTO.head(2).write_parquet(tmp_path / "old" / "kto" / "train-b00000-p000.parquet")
    os.link(
        tmp_path / "old" / "kto" / "train-b00000-p000.parquet",
        tmp_path / "new" / "kto" / "train-b00000-p000.parquet",
    )
    KTO.slice(2, 1).write_parquet(tmp_path / "old" / "kto" / "train-b00000-p001.parquet")
    relabelled = KTO.slice(2, 1).with_columns(label=pl.lit(True))
    new_row = KTO.slice(2, 1).with_columns(turn_id=pl.lit("t5"))
    pl.concat([relabelled, new_row]).write_parquet(
        tmp_path / "new" / "kto" / "train-b00000-p001.parquet"
    )
    read = []
    monkeypatch.setattr(
        diff, "keyed_file", lambda name, frame: read.append(frame.height) or keyed_file(name, frame)
    )
    changes = diff.diff_folders(tmp_path / "old", tmp_path / "new", {}, {})
    assert sorted(read) == [1, 2, 2]  # p000 once, p001 of each release
    assert changes.rows == [
        {
            "dataset": "kto",
            "split": "train",
            "before": 3,
            "after": 4,
            "added": 1,
            "removed": 0,
            "changed": 1,
            "moved_in": 0,
        }
    ]


def _manifest_of(folder) -> dict:
    from pipelines.storage.fingerprint import sha256_file

    files = sorted(p for p in folder.rglob("*.parquet"))
    return {
        "files": [
            {"path": p.relative_to(folder).as_posix(), "sha256": sha256_file(p)} for p in files
        ]
    }


def _kto_releases(tmp_path, new_p000: pl.DataFrame) -> None:
    """old: p000 = t1, t2 and p001 = t3; new: a copy of p000's bytes (not a link), and p001
    with t3 relabelled and t5 new, beside `new_p000` as p002."""
    for release in ("old", "new"):
        (tmp_path / release / "kto").mkdir(parents=True)
    KTO.head(2).write_parquet(tmp_path / "old" / "kto" / "train-b00000-p000.parquet")
    (tmp_path / "new" / "kto" / "train-b00000-p000.parquet").write_bytes(
        (tmp_path / "old" / "kto" / "train-b00000-p000.parquet").read_bytes()
    )
    KTO.slice(2, 1).write_parquet(tmp_path / "old" / "kto" / "train-b00000-p001.parquet")
    relabelled = KTO.slice(2, 1).with_columns(label=pl.lit(True))
    new_row = KTO.slice(2, 1).with_columns(turn_id=pl.lit("t5"))
    pl.concat([relabelled, new_row]).write_parquet(
        tmp_path / "new" / "kto" / "train-b00000-p001.parquet"
    )
    new_p000.write_parquet(tmp_path / "new" / "kto" / "train-b00000-p002.parquet")


def test_a_file_both_manifests_list_with_the_same_bytes_is_not_read_whole(tmp_path, monkeypatch):
    """p000 has the same sha256 in both manifests: only p001 of each release is read whole, and
    the changes are those counted by hand (t3 changed, t5 added; t1 and t2 unchanged), the same as
    reading every file whole (no manifests); its rewards and labels still count."""
    from pipelines.release.card import diff

    _kto_releases(tmp_path, KTO.slice(0, 0))
    old, new = tmp_path / "old", tmp_path / "new"
    read = []
    monkeypatch.setattr(
        diff, "keyed_file", lambda name, frame: read.append(frame.height) or keyed_file(name, frame)
    )
    changes = diff.diff_folders(old, new, _manifest_of(old), _manifest_of(new))
    assert sorted(read) == [0, 1, 2]  # p001 of each release, and the new empty p002
    assert changes.rows == [
        {
            "dataset": "kto",
            "split": "train",
            "before": 3,
            "after": 4,
            "added": 1,
            "removed": 0,
            "changed": 1,
            "moved_in": 0,
        }
    ]
    assert changes.labels == [
        {"dataset": "kto", "label": False, "before": 1, "after": 1},
        {"dataset": "kto", "label": True, "before": 2, "after": 3},
    ]
    read.clear()
    whole = diff.diff_folders(old, new, {}, {})
    assert sorted(read) == [0, 1, 2, 2, 2]  # the copy of p000 is another file
    assert changes == whole


def test_an_unchanged_file_whose_ids_repeat_elsewhere_is_read_whole(tmp_path, monkeypatch):
    """The new p002 is an exact copy of row t1: `turn_id` is no identity in the new release, so
    a row is keyed by its content, and the unchanged p000 is read whole too. By hand: the new
    t1 twice with the same content is kept once (after 4); the old rows keyed by id match none
    of the new ones keyed by id and content (4 added, 3 removed); the diff equals the one that
    reads every file."""
    from pipelines.release.card import diff

    _kto_releases(tmp_path, KTO.head(1))
    old, new = tmp_path / "old", tmp_path / "new"
    read = []
    monkeypatch.setattr(
        diff, "keyed_file", lambda name, frame: read.append(frame.height) or keyed_file(name, frame)
    )
    changes = diff.diff_folders(old, new, _manifest_of(old), _manifest_of(new))
    assert 2 in read  # p000, read whole
    train = changes.rows[0]
    assert (train["before"], train["after"]) == (3, 4)
    assert (train["added"], train["removed"], train["changed"]) == (4, 3, 0)
    assert changes == diff.diff_folders(old, new, {}, {})
