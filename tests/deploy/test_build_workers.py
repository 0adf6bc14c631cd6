"""`turnlake build --workers N`: the multiprocess executor from the CLI, holding the data root
for the whole run (issue 15), so a second build cannot start between two of its steps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
TURNLAKE = [sys.executable, "-m", "pipelines.cli.main"]
# Tries to take the data root every 50 ms until the stop file appears; prints the time of every
# try, with "got" for those that got it.
PROBE = (
    "import sys, time; from pathlib import Path\n"
    "from pipelines.storage.layout import Layout\n"
    "from pipelines.storage.lock import DataRootBusy, data_root_lock\n"
    "layout, stop = Layout(Path(sys.argv[1])), Path(sys.argv[2])\n"
    "while not stop.exists():\n"
    "    try:\n"
    "        with data_root_lock(layout):\n"
    "            print(time.time(), 'got', flush=True)\n"
    "    except DataRootBusy:\n"
    "        print(time.time(), 'busy', flush=True)\n"
    "    time.sleep(0.05)\n"
)


def run_span(home: Path) -> tuple[float, float]:
    """Start and end time of the one run with a data-root lease in the instance at `home`."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        [run] = [run for run in instance.get_runs() if "turnlake/run_lease" in run.tags]
        record = instance.get_run_record_by_id(run.run_id)
        return record.start_time, record.end_time


@pytest.mark.slow  # ~2 min on 2 busy cores: 12 step processes
def test_no_other_build_starts_between_two_steps_of_a_multiprocess_build(
    clean_root, tmp_path, new_dagster_home
):
    data, home = tmp_path / "data", new_dagster_home()
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    env.pop("TURNLAKE_DATA_ROOT", None)
    roots = ["--raw-root", str(clean_root), "--data-root", str(data)]
    first = subprocess.Popen(
        [*TURNLAKE, "build", *roots, "--workers", "2"],
        cwd=PROJECT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines = []
    for line in first.stdout:  # until its first step has finished: steps run from now on
        lines.append(line)
        if line.startswith("[1/"):
            break
    assert first.poll() is None, "".join(lines)
    stop = tmp_path / "stop"
    probe = subprocess.Popen(
        [sys.executable, "-c", PROBE, str(data), str(stop)],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        text=True,
    )
    second = subprocess.run(
        [*TURNLAKE, "build", *roots],
        check=False,
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
    )
    lines += first.stdout.readlines()
    assert first.wait(timeout=900) == 0, "".join(lines)
    stop.touch()
    probes = [line.split() for line in probe.communicate(timeout=60)[0].splitlines()]
    start, end = run_span(home)
    during = [outcome for at, outcome in probes if start <= float(at) <= end]

    assert second.returncode == 3, second.stdout + second.stderr
    assert "another turnlake build is writing to" in second.stderr
    assert len(during) > 100  # probed all through the run's steps, between steps too ...
    assert set(during) == {"busy"}  # ... and the data root was never free while the run lasted
    assert any(line.startswith("[12/12] warehouse_views") for line in lines), "".join(lines)


def test_fewer_than_one_worker_is_bad_usage(tmp_path, capsys):
    from pipelines.cli.main import main

    assert main(["build", "--data-root", str(tmp_path), "--workers", "0"]) == 2
    assert "Invalid value for '--workers'" in capsys.readouterr().err
