from pathlib import Path

import pytest

from pipelines.config import Settings

FIXTURES = Path(__file__).parent / "fixtures"
REAL_SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "real_samples"


@pytest.fixture
def clean_root() -> Path:
    return FIXTURES / "clean"


@pytest.fixture
def dirty_root() -> Path:
    return FIXTURES / "dirty"


@pytest.fixture
def settings_for(tmp_path):
    def make(raw_root: Path) -> Settings:
        return Settings(raw_root=raw_root, data_root=tmp_path / "data")

    return make
