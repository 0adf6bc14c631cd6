"""`[schedule] cron` is checked without Dagster, never accepting what Dagster's schedules refuse."""

from __future__ import annotations

import pytest
from dagster._utils.schedules import is_valid_cron_string
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.config.cron import is_cron

# what Dagster 1.13 answers for each (read from `is_valid_cron_string` once, written here by hand)
ACCEPTED = [
    "0 2 * * *",
    "30 3 * * 1-5",
    "*/15 * * * *",
    "5/15 * * * *",
    "1-5/2,7 * * * *",
    "0 0 1-31/2 * *",
    "00 02 * * *",
    "0 0 * JAN *",
    "0 0 * * MON-FRI",
    "0 0 * * sun",
    "0 0 * * 7",
    "0 0 * * 5-0",
    "0 0 L * *",
    "0 0 * * 5#3",
    "0 0 ? * *",
    "0  0 * * *",
    "0 0 30,31 2 *",
    "@daily",
    "@hourly",
    "@midnight",
]
REFUSED = [
    "every night",
    "0 2 * *",
    "0 0 * * * *",
    "60 0 * * *",
    "0 24 * * *",
    "0 0 0 * *",
    "0 0 * 13 *",
    "0 0 * * 8",
    "*/0 * * * *",
    "0 0 30 2 *",
    "0 0 31 feb *",
    "@sometimes",
    "",
]


@pytest.mark.parametrize("expression", ACCEPTED)
def test_forms_dagster_accepts_are_accepted(expression):
    assert is_cron(expression)


@pytest.mark.parametrize("expression", REFUSED)
def test_forms_dagster_refuses_are_refused(expression):
    assert not is_cron(expression)


_TOKENS = st.sampled_from(
    ["*", "?", "L", "0", "1", "2", "5", "7", "12", "13", "23", "24", "30", "31", "59", "60"]
    + ["jan", "feb", "FEB", "dec", "sun", "mon", "sat", "x", "5#3", "5L", "-1", ""]
)
_ITEM = st.builds(
    lambda a, b, step: a + (f"-{b}" if b else "") + (f"/{step}" if step is not None else ""),
    _TOKENS,
    st.one_of(st.none(), _TOKENS),
    st.one_of(st.none(), st.integers(0, 70)),
)
_FIELD = st.lists(_ITEM, min_size=1, max_size=3).map(",".join)
_EXPRESSION = st.lists(_FIELD, min_size=4, max_size=6).map(" ".join)


@settings(max_examples=600, deadline=None)
@given(_EXPRESSION)
def test_nothing_dagster_refuses_is_accepted(expression):
    if is_cron(expression):
        assert is_valid_cron_string(expression), expression


def test_reading_settings_does_not_import_dagster(tmp_path):
    import subprocess
    import sys

    (tmp_path / "turnlake.toml").write_text('[schedule]\ncron = "30 3 * * 1-5"\n')
    code = (
        "import sys; from pathlib import Path; "
        "from pipelines.config.settings import read_config_file; "
        f"read_config_file(Path({str(tmp_path / 'turnlake.toml')!r})); "
        "print('dagster' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
