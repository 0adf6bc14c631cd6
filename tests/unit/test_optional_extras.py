"""Minari is an optional extra: asking for it where it is not installed fails first, naming the
install command; where it is installed, its versions are part of the engine digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import extras
from pipelines.config.settings import SettingsError, settings_from_env
from pipelines.storage.engine import dependency_versions

ABSENT = "turnlake_test_module_that_is_not_installed"


@pytest.fixture
def minari_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extras, "MINARI_MODULES", ("json", ABSENT))


def _settings(tmp_path: Path, text: str):
    path = tmp_path / "turnlake.toml"
    path.write_text(text)
    env = {"TURNLAKE_CONFIG": str(path), "TURNLAKE_DATA_ROOT": str(tmp_path / "data")}
    return settings_from_env(env)


def test_missing_modules_names_only_what_cannot_be_imported() -> None:
    assert extras.missing_modules(("json", ABSENT, "polars")) == [ABSENT]


def test_minari_setting_without_the_extra_names_the_install(tmp_path, minari_absent) -> None:
    with pytest.raises(SettingsError) as raised:
        _settings(tmp_path, "[release]\nminari = true\n")
    assert "pip install 'turnlake[minari]'" in str(raised.value)
    assert ABSENT in str(raised.value)


def test_minari_off_needs_no_extra(tmp_path, minari_absent) -> None:
    assert _settings(tmp_path, "[release]\nminari = false\n").release_minari is False


def test_export_without_the_extra_exits_2_naming_the_install(tmp_path, capsys, minari_absent):
    from pipelines.cli.main import main

    code = main(["export", "minari", "--data-root", str(tmp_path / "data")])
    assert code == 2
    assert "pip install 'turnlake[minari]'" in capsys.readouterr().err


def test_installed_extra_is_in_the_engine_digest() -> None:
    pytest.importorskip("minari")
    names = {line.split("==")[0] for line in dependency_versions().splitlines()}
    assert {"minari", "gymnasium", "h5py"} <= names
