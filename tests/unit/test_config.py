"""turnlake.toml and rewards.toml through the real settings path: read once, typed, validated.

Every test reads its file through `settings_from_env` (TURNLAKE_CONFIG) or `load_params`
(TURNLAKE_REWARDS / run overrides), as the CLI and the Dagster assets do. A bad key or value must
stop with an error that names the file, the key and what is allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import settings as config
from pipelines.config.settings import Limits, SettingsError, settings_from_env
from pipelines.gold.params import OVERRIDES, load_params, rewards_path
from pipelines.privacy.redact import KINDS

PROJECT = Path(__file__).resolve().parents[2]


def settings_for(tmp_path: Path, text: str):
    path = tmp_path / "turnlake.toml"
    path.write_text(text)
    env = {"TURNLAKE_CONFIG": str(path), "TURNLAKE_DATA_ROOT": str(tmp_path / "data")}
    return settings_from_env(env), path


def error_for(tmp_path: Path, text: str) -> str:
    with pytest.raises(SettingsError) as raised:
        settings_for(tmp_path, text)
    return str(raised.value)


# ---------------------------------------------------------------- every table takes effect


EVERY_TABLE = """
[timezones]
study = "America/Los_Angeles"
decision = "Europe/Berlin"

[dialogue.turn_index_base]
tutoring = 1
legacy = 0

[decision.rating_scale]
ops = "1-5"
lab = "0-1"

[ingest]
remove_deleted_files = true
batch_files = 10
batch_mb = 3
workers = 2
rehash_unchanged = true

[schedule]
cron = "30 3 * * 1-5"
timezone = "Europe/Berlin"

[splits]
salt = "my-salt"

[splits.ratios]
train = 0.7
validation = 0.1
test = 0.2

[limits]
max_record_bytes = 1000
max_file_bytes = 2000
max_nesting_depth = 8
max_decompressed_bytes = 3000
raw_excerpt_chars = 50

[retention]
keep_days = 30

[release]
kto_include_neutral = true
sft_include_negative = true

[privacy]
include_surveys = true
pseudonym_key_file = "keys/pseudonym.key"
generate_key_on_s3 = true

[privacy.redaction]
org_names = ["Globex"]
phone_regions = ["us", "CH"]
kinds = ["email", "ORG"]
"""


def test_every_table_of_turnlake_toml_reaches_the_typed_settings(tmp_path):
    s, path = settings_for(tmp_path, EVERY_TABLE)
    assert s.config_path == path
    assert s.raw_root == tmp_path / "data" / "raw" and s.data_root == tmp_path / "data"
    assert (
        s.timezone_for("study") == "America/Los_Angeles"
        and s.timezone_for("decision") == "Europe/Berlin"
    )
    assert s.timezone_for("scenario") == "UTC"
    assert s.dialogue_turn_index_base == {"tutoring": 1, "legacy": 0}
    assert s.rating_scale_for("ops") == "1-5" and s.rating_scale_for("lab") == "0-1"
    assert s.rating_scale_for("unlisted") is None
    assert s.decision_rating_scale == {"ops": "1-5", "lab": "0-1"}
    assert (
        s.remove_deleted_files,
        s.ingest_batch_files,
        s.ingest_workers,
        s.ingest_rehash_unchanged,
    ) == (True, 10, 2, True)
    assert s.ingest_batch_bytes == 3 * 1024 * 1024
    assert (s.schedule_cron, s.schedule_timezone) == ("30 3 * * 1-5", "Europe/Berlin")
    # item 8 of issue 13: the [splits] table used to be looked up inside itself and ignored
    assert s.splits.salt == "my-salt"
    assert s.splits.ratios == {"train": 0.7, "validation": 0.1, "test": 0.2}
    assert s.splits.bucket_ranges() == {
        "train": (0, 7000),
        "validation": (7000, 8000),
        "test": (8000, 10000),
    }
    assert s.limits == Limits(1000, 2000, 8, 3000, 50)
    assert s.retention_keep_days == 30
    assert s.release_kto_include_neutral and s.release_sft_include_negative
    assert s.privacy.include_surveys and s.privacy.pseudonym_key_file == "keys/pseudonym.key"
    assert s.privacy.generate_key_on_s3
    assert s.privacy.redaction.org_names == ["Globex"]
    assert s.privacy.redaction.phone_regions == ["US", "CH"]
    assert s.privacy.redaction.kinds == frozenset({"email", "org"})


def test_an_absent_table_or_file_gives_the_documented_defaults(tmp_path, monkeypatch):
    s, _ = settings_for(tmp_path, "")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    none = settings_from_env({"TURNLAKE_DATA_ROOT": str(tmp_path)})  # no ./turnlake.toml here
    assert none.config_path is None
    for settings in (s, none):
        assert settings.splits.salt == "turnlake-splits-v1"
        assert settings.splits.ratios == {"train": 0.8, "test": 0.2}
        assert settings.schedule_cron == "0 2 * * *" and settings.schedule_timezone == "UTC"
        assert (
            settings.ingest_batch_files == 2000 and settings.ingest_batch_bytes == 64 * 1024 * 1024
        )
        assert settings.limits == Limits()
        assert (
            not settings.privacy.include_surveys
            and not settings.privacy.generate_key_on_s3
            and settings.privacy.redaction.kinds == frozenset(KINDS)
        )
        assert settings.dialogue_turn_index_base == {}


def test_the_shipped_turnlake_toml_is_valid():
    s = settings_from_env({"TURNLAKE_CONFIG": str(PROJECT / "turnlake.toml")})
    assert s.dialogue_turn_index_base["tutoring"] == 1  # the demo's 1-based dataset, as shipped
    assert s.splits.salt == "turnlake-splits-v1" and s.splits.ratios == {"train": 0.8, "test": 0.2}


def test_turnlake_toml_is_read_once_per_version_of_the_file(tmp_path, monkeypatch):
    reads = []
    real_load = config.tomllib.load
    monkeypatch.setattr(config.tomllib, "load", lambda fh: reads.append(fh.name) or real_load(fh))
    _, path = settings_for(tmp_path, '[splits]\nsalt = "once"\n')
    for _ in range(3):
        assert settings_from_env({"TURNLAKE_CONFIG": str(path)}).splits.salt == "once"
    assert len(reads) == 1
    path.write_text('[splits]\nsalt = "changed"\n')  # a new size: read again
    assert settings_from_env({"TURNLAKE_CONFIG": str(path)}).splits.salt == "changed"
    assert len(reads) == 2


# ---------------------------------------------------------------- bad keys and values stop the
# build


BAD = {
    "typo": (
        "[ingest]\nbatch_file = 10\n",
        "[ingest] batch_file: unknown key; allowed: remove_deleted_files, batch_files, batch_mb, "
        "workers, " + "rehash_unchanged",
    ),
    "unknown_table": (
        "[bogus]\nx = 1\n",
        "[bogus]: unknown table; allowed: timezones, dialogue, decision",
    ),
    "cron": (
        '[schedule]\ncron = "every night"\n',
        "[schedule] cron: 'every night' is not a cron expression",
    ),
    "cron_fields": (
        '[schedule]\ncron = "0 2 * *"\n',
        "[schedule] cron: '0 2 * *' is not a cron expression",
    ),
    "schedule_zone": (
        '[schedule]\ntimezone = "Nowhere/Land"\n',
        "[schedule] timezone: unknown time zone 'Nowhere/Land'",
    ),
    "source_zone": (
        '[timezones]\nstudy = "Mars/Olympus"\n',
        "[timezones] study: unknown time zone 'Mars/Olympus'",
    ),
    "zone_of_unknown_source": (
        '[timezones]\nstduy = "UTC"\n',
        "[timezones] stduy: unknown key; allowed: scenario, study, social_rl, dialogue, decision",
    ),
    "turn_index_base": (
        "[dialogue.turn_index_base]\ntutoring = 2\n",
        "[dialogue.turn_index_base] tutoring: should be 0 or 1, got 2",
    ),
    "ratios_sum": (
        "[splits.ratios]\ntrain = 0.8\ntest = 0.3\n",
        "[splits.ratios]: ratios must sum to 1, got 1.1 (train 0.8 + test 0.3)",
    ),
    "unknown_split": (
        "[splits.ratios]\ntrain = 0.5\ndev = 0.5\n",
        "[splits.ratios] dev: unknown key; allowed: train, validation, test",
    ),
    "negative_ratio": (
        "[splits.ratios]\ntrain = 1.2\ntest = -0.2\n",
        "[splits.ratios] test: should be greater than",
    ),
    "empty_salt": ('[splits]\nsalt = ""\n', "[splits] salt: should not be empty"),
    "rating_scale": (
        '[decision.rating_scale]\nops = "1-10"\n',
        "[decision.rating_scale] ops: should be '0-1' or '1-5', got '1-10'",
    ),
    "wrong_type": (
        '[ingest]\nworkers = "4"\n',
        "[ingest] workers: should be a whole number, got '4'",
    ),
    "bool_type": (
        '[release]\nkto_include_neutral = "yes"\n',
        "[release] kto_include_neutral: should be true or false, got 'yes'",
    ),
    "label_agreement": (
        "[release]\nmin_label_agreement = 1.5\n",
        "[release] min_label_agreement: should be less than or equal to 1, got 1.5",
    ),
    "limit": (
        "[limits]\nmax_file_bytes = 0\n",
        "[limits] max_file_bytes: should be greater than 0, got 0",
    ),
    "redaction_kind": (
        '[privacy.redaction]\nkinds = ["email", "ssn"]\n',
        (
            "[privacy.redaction] kinds[1]: should be 'url', 'token', 'email', 'card', 'iban', "
            "'national_id', 'ip', 'phone', 'money', 'address', 'person', 'known_name' or 'org'"
        ),
    ),
    "phone_region": (
        '[privacy.redaction]\nphone_regions = ["XX"]\n',
        "[privacy.redaction] phone_regions[0]: unknown phone region 'XX'",
    ),
    "key_literal": (
        '[privacy]\npseudonym_key = "0123456789abcdef0123"\n',
        "[privacy]: turnlake.toml must not hold the pseudonym key itself",
    ),
    "retention_days": (
        "[retention]\nkeep_days = -1\n",
        "[retention] keep_days: should be greater than or equal to 0, got -1",
    ),
    "whole_tables": (
        "[partitions]\nshards = 0\n",
        (
            "[partitions] shards: 0 (tables stored whole) is no longer a layout: a whole table "
            "is now one partition; use `shards = 1`"
        ),
    ),
    "not_a_table": ("release = 3\n", "release (top level): should be a table, got 3"),
    "not_toml": ("[ingest\n", "not valid TOML"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_key_or_value_in_turnlake_toml_names_the_file_the_key_and_what_is_allowed(
    tmp_path, case
):
    text, expected = BAD[case]
    message = error_for(tmp_path, text)
    assert str(tmp_path / "turnlake.toml") in message
    assert expected in message


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    message = error_for(tmp_path, '[ingest]\nbatch_file = 1\n[schedule]\ncron = "nope"\n')
    assert "[ingest] batch_file" in message and "[schedule] cron" in message


@pytest.mark.parametrize("name", ["nope.toml", "."])
def test_a_settings_file_named_by_the_environment_must_exist_and_be_a_file(tmp_path, name):
    missing = tmp_path / name
    with pytest.raises(SettingsError, match="cannot read the settings file") as raised:
        settings_from_env({"TURNLAKE_CONFIG": str(missing)})
    assert str(missing.resolve() if name == "." else missing) in str(raised.value)


# ---------------------------------------------------------------- rewards.toml and overrides


def rewards_error(**kwargs) -> str:
    with pytest.raises(SettingsError) as raised:
        load_params(**kwargs)
    return str(raised.value)


def test_the_shipped_rewards_toml_is_valid_and_is_what_load_params_reads_by_default(monkeypatch):
    monkeypatch.delenv("TURNLAKE_REWARDS", raising=False)
    assert rewards_path() == PROJECT / "rewards.toml"
    assert load_params()["aggregation"]["method"] == "mean"


def test_a_rewards_file_named_by_the_environment_is_validated_against_the_shipped_one(
    tmp_path, monkeypatch
):
    custom = tmp_path / "rewards.toml"
    custom.write_text(
        '[aggregation]\nmethod = "median"\n[dialogue_feedback]\nrating_mapp = { "1" = 1.0 }\n'
    )
    monkeypatch.setenv("TURNLAKE_REWARDS", str(custom))
    message = rewards_error()
    assert str(custom) in message
    assert (
        "[dialogue_feedback] rating_mapp: unknown key; allowed: rating_map, reward_roles" in message
    )
    custom.write_text('[aggregation]\nmethod = "median"\n')
    assert load_params()["aggregation"]["method"] == "median"


REWARD_OVERRIDES = {
    "unknown_table": ({"bogus": {"x": 1}}, "[bogus]: unknown table; allowed: rules, aggregation"),
    "unknown_key": (
        {"study_stance_step": {"scal": 0.5}},
        "[study_stance_step] scal: unknown key; allowed: ",
    ),
    "unknown_map_key": (
        {"scenario_outcome": {"weights": {"user_validatd": 1.0}}},
        "[scenario_outcome.weights] user_validatd: unknown key",
    ),
    "wrong_type": (
        {"study_stance_step": {"scale": "half"}},
        "[study_stance_step] scale: should be a number (shipped: 0.5), got 'half'",
    ),
    "bool_for_number": (
        {"study_stance_step": {"scale": True}},
        "[study_stance_step] scale: should be a number",
    ),
    "list_items": (
        {"quality": {"correction_terms": [1]}},
        "[quality] correction_terms: items should be a string",
    ),
    "table_for_value": ({"aggregation": "mean"}, "[aggregation]: should be a table"),
}


@pytest.mark.parametrize("case", sorted(REWARD_OVERRIDES))
def test_a_bad_reward_override_names_the_overrides_and_the_key(case):
    overrides, expected = REWARD_OVERRIDES[case]
    message = rewards_error(path=PROJECT / "rewards.toml", overrides=overrides)
    assert OVERRIDES in message and expected in message


def test_an_enabled_rule_must_be_registered():
    message = rewards_error(
        path=PROJECT / "rewards.toml", overrides={"rules": {"enabled": ["dialogue_feedbak@1"]}}
    )
    assert "[rules] enabled: unknown rule(s) ['dialogue_feedbak@1']; registered: " in message
    assert "dialogue_feedback@1" in message.split("registered:")[1]


def test_the_aggregation_method_must_be_a_known_one():
    message = rewards_error(
        path=PROJECT / "rewards.toml", overrides='{"aggregation": {"method": "mode"}}'
    )
    assert "[aggregation] method: 'mode' is not one of mean, median, min, max, last" in message


def test_the_json_request_pattern_must_be_a_regular_expression():
    message = rewards_error(
        path=PROJECT / "rewards.toml", overrides={"quality": {"json_request_pattern": "(json"}}
    )
    assert "[quality] json_request_pattern: not a valid regular expression" in message


def test_override_text_that_is_neither_json_nor_toml_is_a_settings_error():
    assert "neither a JSON object nor TOML" in rewards_error(
        path=PROJECT / "rewards.toml", overrides="method = "
    )


def test_a_valid_override_takes_effect_and_keeps_the_rest():
    params = load_params(
        PROJECT / "rewards.toml", '[aggregation]\nmethod = "max"\n[study_stance_step]\nscale = 1'
    )
    assert params["aggregation"]["method"] == "max" and params["study_stance_step"]["scale"] == 1
    assert params["study_stance_step"]["stance_values"]["AGREE"] == 1.0


def test_schedule_table_sets_the_nightly_schedule(tmp_path):
    from pipelines.definitions import build_definitions

    s, _ = settings_for(
        tmp_path, '[schedule]\ncron = "15 4 * * 1-5"\ntimezone = "America/New_York"\n'
    )
    schedule = build_definitions(s).resolve_schedule_def("nightly_build")
    assert (schedule.cron_schedule, schedule.execution_timezone) == (
        "15 4 * * 1-5",
        "America/New_York",
    )


def test_every_example_key_the_shipped_turnlake_toml_documents_is_valid_when_uncommented(tmp_path):
    import re

    example = re.compile(r"^# (\[[\w.]+\]|[a-z_]+ = .+)$")
    lines = (PROJECT / "turnlake.toml").read_text().splitlines()
    uncommented = "\n".join(line[2:] if example.match(line) else line for line in lines)
    assert uncommented.count("\n[") > (PROJECT / "turnlake.toml").read_text().count("\n[")
    s, _ = settings_for(tmp_path, uncommented)
    assert s.timezone_for("study") == "America/Los_Angeles"
    assert s.rating_scale_for("continuum") == "1-5"
    assert s.privacy.redaction.org_names == ["Acme Corp", "Globex"]
    assert s.release_profiles["helpful_kto"].datasets == ["kto", "preference"]
