"""Where a release's pseudonym key comes from (privacy/key.py), and the check build, release and
forget make before any work: a configured key wins; a local data root without one generates one
under it; an S3 data root without one, or a configured key that cannot be used, stops with exit 2
naming the variable and the setting. No S3 server: nothing here may reach the bucket."""

from __future__ import annotations

import stat
from dataclasses import replace
from pathlib import Path

import pytest

from pipelines.api.roots import require_pseudonym_key
from pipelines.cli.main import exit_code
from pipelines.config.settings import Settings, SettingsError
from pipelines.orchestration.build_record import NO_KEY, pseudonym_key_digest
from pipelines.privacy.key import key_problem, pseudonym_key
from pipelines.privacy.pseudonyms import KEY_ENV, PseudonymKeyError
from pipelines.storage.uri import is_remote

ENV_KEY = "env-key-0123456789abcdef"
REMOTE = "s3://lake/turnlake"


@pytest.fixture(autouse=True)
def no_key_in_env(monkeypatch) -> None:
    """No key, and S3 pointed at a port that refuses: a request to the bucket raises."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "turnlake-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "turnlake-test-secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")


def _settings(
    data_root: str | Path, key_file: str | None = None, generate_on_s3: bool = False
) -> Settings:
    settings = Settings().with_roots(None, data_root)
    privacy = replace(
        settings.privacy, pseudonym_key_file=key_file, generate_key_on_s3=generate_on_s3
    )
    return replace(settings, privacy=privacy)


def test_on_s3_without_a_key_the_problem_names_the_variable_the_setting_and_how_to_make_one():
    problem = key_problem(_settings(REMOTE))
    assert problem is not None
    assert "TURNLAKE_PSEUDONYM_KEY" in problem and "[privacy] pseudonym_key_file" in problem
    assert "openssl rand -hex 32" in problem and REMOTE in problem


def test_on_s3_without_a_key_pseudonym_key_refuses_instead_of_opening_an_s3_path():
    settings = _settings(REMOTE)
    assert is_remote(settings.data_root)
    with pytest.raises(PseudonymKeyError, match="TURNLAKE_PSEUDONYM_KEY"):
        pseudonym_key(settings)


def test_on_s3_asking_for_a_generated_key_passes_the_check_without_generating_it():
    """`[privacy] generate_key_on_s3 = true`: the key is made on first use (tests/s3), not by
    the check (the endpoint refuses: a request would raise)."""
    assert key_problem(_settings(REMOTE, generate_on_s3=True)) is None
    require_pseudonym_key(_settings(REMOTE, generate_on_s3=True))


def test_on_s3_the_key_in_the_environment_is_used(monkeypatch):
    monkeypatch.setenv(KEY_ENV, ENV_KEY)
    settings = _settings(REMOTE)
    assert key_problem(settings) is None
    assert pseudonym_key(settings) == (ENV_KEY.encode(), "configured")


def test_on_s3_a_local_key_file_is_used(tmp_path):
    (tmp_path / "key").write_text("file-key-0123456789abcdef\n")
    settings = _settings(REMOTE, str(tmp_path / "key"))
    assert key_problem(settings) is None
    assert pseudonym_key(settings) == (b"file-key-0123456789abcdef", "configured")


def test_a_local_data_root_without_a_key_generates_one_under_it_once(tmp_path):
    settings = _settings(tmp_path / "data")
    assert key_problem(settings) is None  # nothing to stop: the release generates it
    path = tmp_path / "data" / ".turnlake" / "pseudonym.key"
    assert not path.exists()  # the check generates nothing
    key, origin = pseudonym_key(settings)
    assert len(key) == 64 and origin == f"generated ({path})"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert pseudonym_key(settings)[0] == key  # the same key the next time


@pytest.mark.parametrize(
    ("environ", "key_file", "message"),
    [
        ({}, "/nonexistent/key", "cannot read pseudonym key file /nonexistent/key"),
        ({KEY_ENV: "short"}, None, "holds 5 bytes"),
    ],
)
@pytest.mark.parametrize("data_root", ["local", REMOTE])
def test_a_configured_key_that_cannot_be_used_is_never_replaced_by_a_generated_one(
    tmp_path, monkeypatch, environ, key_file, message, data_root
):
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    settings = _settings(tmp_path / "data" if data_root == "local" else data_root, key_file)
    assert message in (key_problem(settings) or "")
    with pytest.raises(PseudonymKeyError, match=message):
        pseudonym_key(settings)
    assert not (tmp_path / "data").exists()


def test_the_early_check_is_a_settings_error_exit_2():
    with pytest.raises(SettingsError, match="TURNLAKE_PSEUDONYM_KEY") as raised:
        require_pseudonym_key(_settings(REMOTE))
    assert exit_code(raised.value) == 2


def test_the_early_check_lets_a_local_root_and_a_configured_key_through(tmp_path, monkeypatch):
    require_pseudonym_key(_settings(tmp_path / "data"))
    monkeypatch.setenv(KEY_ENV, ENV_KEY)
    require_pseudonym_key(_settings(REMOTE))
    assert not (tmp_path / "data").exists()


def test_the_build_record_digest_of_an_s3_root_without_a_key_reads_nothing():
    """`NO_KEY`, without looking for a generated key in the bucket (the endpoint refuses)."""
    assert pseudonym_key_digest(_settings(REMOTE)) == NO_KEY
