"""A build through the multiprocess executor on a Postgres instance (deploy/postgres)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from pipelines.definitions import BUILD_JOB, defs

PG_INSTANCE = Path(__file__).resolve().parents[2] / "deploy" / "postgres" / "dagster.yaml"
BUILD = """
import json, sys
from pathlib import Path
import dagster as dg
from pipelines.config.settings import Settings
from pipelines.definitions import build_job
from pipelines.orchestration.multiprocess import run_build_multiprocess

home, raw, data = sys.argv[1:]
settings = Settings(raw_root=Path(raw), data_root=Path(data))
with dg.DagsterInstance.from_config(home) as instance:
    result = run_build_multiprocess(
        settings, instance, workers=2, log_level="WARNING", job=build_job
    )
print(json.dumps({"run_id": result.run_id, "success": result.success}))
"""


def _rows(server, sql: str, params: tuple = ()) -> list[tuple]:
    """Straight from Postgres, not through Dagster."""
    import psycopg2

    with psycopg2.connect(
        host=server.host, port=server.port, user=server.user, password=server.password,
        dbname=server.db,
    ) as conn, conn.cursor() as cursor:  # fmt: skip
        cursor.execute(sql, params)
        return cursor.fetchall()


def test_multiprocess_build_on_postgres_records_runs_and_assets_there(
    postgres_server, tmp_path, clean_root
):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PG_INSTANCE, home / "dagster.yaml")  # as a user would: the yaml in DAGSTER_HOME
    # A fresh process, as `dg launch` is: the step processes come from a forkserver, which keeps
    # the environment of the process that started it first (an earlier test in this worker).
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(home), str(clean_root), str(tmp_path / "data")],
        env={**os.environ, **postgres_server.env()},
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = SimpleNamespace(**json.loads(done.stdout.strip().splitlines()[-1]))
    assert result.success

    assert _rows(postgres_server, "SELECT run_id, status FROM runs") == [(result.run_id, "SUCCESS")]
    materialized = _rows(
        postgres_server,
        "SELECT DISTINCT asset_key FROM event_logs "
        "WHERE run_id = %s AND dagster_event_type = 'ASSET_MATERIALIZATION'",
        (result.run_id,),
    )
    expected = defs.resolve_job_def(BUILD_JOB).asset_layer.selected_asset_keys
    assert {tuple(json.loads(key)) for (key,) in materialized} == {
        tuple(key.path) for key in expected
    }
    # Every step ran in a process of its own (the multiprocess executor), none in this one.
    counts = dict(
        _rows(
            postgres_server,
            "SELECT dagster_event_type, count(*) FROM event_logs WHERE run_id = %s "
            "AND dagster_event_type IN ('STEP_START', 'STEP_WORKER_STARTED') "
            "GROUP BY dagster_event_type",
            (result.run_id,),
        )
    )
    assert counts.get("STEP_START", 0) > 1
    assert counts.get("STEP_WORKER_STARTED") == counts["STEP_START"]
