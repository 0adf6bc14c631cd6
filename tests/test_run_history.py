"""Run history per data root: two data roots built into ONE Dagster instance (as from the
project folder) keep their own history, and the build's closing hint names its data root."""

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import dagster as dg
import pytest

import turnlake
from pipelines.cli.main import main
from pipelines.orchestration.run_tags import DATA_ROOT_TAG, RAW_ROOT_TAG


def write_pairs(raw_root: Path) -> None:
    """Two HH-RLHF preference pairs: the smallest raw root that builds a release."""
    folder = raw_root / "hh_rlhf" / "helpful-base"
    folder.mkdir(parents=True)
    pairs = [
        {
            "chosen": f"\n\nHuman: Q{i}?\n\nAssistant: yes.",
            "rejected": f"\n\nHuman: Q{i}?\n\nAssistant: no.",
        }
        for i in range(2)
    ]
    (folder / "train.jsonl").write_text("\n".join(map(json.dumps, pairs)) + "\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory, new_dagster_home):
    """Data root A built through the CLI (its output kept), then B through the API, into one
    Dagster instance; yields A, B, A's printed output and B's BuildResult."""
    root = tmp_path_factory.mktemp("history")
    a, b = root / "a root", root / "b"
    for data_root in (a, b):
        write_pairs(data_root / "raw")
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(new_dagster_home()))
    mp.delenv("TURNLAKE_RAW_ROOT", raising=False)
    mp.delenv("TURNLAKE_DATA_ROOT", raising=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["build", "--data-root", str(a), "--log-level", "ERROR"])
    assert code == 0, out.getvalue()
    yield a, b, out.getvalue(), turnlake.build(data_root=b, log_level="ERROR")
    mp.undo()


def test_each_build_run_is_tagged_with_its_data_root_and_raw_root(built):
    _, b, _, b_result = built
    with dg.DagsterInstance.get() as instance:
        tags = instance.get_run_by_id(b_result.run_id).tags
    assert tags[DATA_ROOT_TAG] == str(b.resolve())
    assert tags[RAW_ROOT_TAG] == str((b / "raw").resolve())


def test_status_shows_the_last_run_of_its_own_data_root_not_the_newest_in_the_instance(built):
    a, b, a_output, b_result = built
    [a_run_id] = re.findall(r"^run (\S+): succeeded", a_output, flags=re.MULTILINE)
    assert turnlake.status(data_root=a).last_run.run_id == a_run_id != b_result.run_id
    assert turnlake.status(data_root=b).last_run.run_id == b_result.run_id


def test_status_of_a_data_root_never_built_has_no_last_run(built, tmp_path, capsys):
    (tmp_path / "raw").mkdir()
    assert turnlake.status(data_root=tmp_path).last_run is None
    main(["status", "--data-root", str(tmp_path)])
    assert f"no runs of data root {tmp_path} recorded" in capsys.readouterr().out


def test_closing_hint_queries_the_warehouse_of_the_data_root_it_built(built):
    a, _, out, _ = built
    assert f'turnlake sql --data-root {shlex.quote(str(a))} "SELECT' in out
    assert f"turnlake shell --data-root {shlex.quote(str(a))}" in out
