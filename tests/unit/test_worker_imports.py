"""A parse worker imports neither Pandera nor pandas (issue 36: ~50 MB and ~0.5 s of CPU apiece,
and as much again in their forkserver): parsing types rows with the plain bronze schemas
(pipelines/schemas/bronze_dtypes.py), and pyarrow is kept from importing pandas to ask whether a
list is a pandas object. Each case runs in a fresh interpreter, where nothing imported them yet."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]

# Parses four dialogue files (typed through Arrow) in two workers, keeps the workers, and prints
# what each of them imported of pandera and pandas, one worker a line.
PARSE_IN_WORKERS = """
    import sys, time
    from dataclasses import replace
    from pathlib import Path

    def heavy_imports(seconds):
        time.sleep(seconds)  # long enough that both workers get a task
        import os
        names = sorted({n.split(".")[0] for n in sys.modules} & {"pandera", "pandas"})
        return os.getpid(), ",".join(names) or "-"

    if __name__ == "__main__":
        from pipelines.config.settings import Settings
        from pipelines.ingest.incremental import ingest_source
        from pipelines.runtime import workers

        workers.IDLE_SECONDS = 600  # the parse workers are kept, to be asked
        workers.IdleExitingPool.release_workers = lambda self: None
        raw = Path(sys.argv[1]) / "raw"
        (raw / "dialogues" / "support").mkdir(parents=True)
        for i in range(4):
            line = '{"conversation_id": "c%d", "turns": [{"role": "user", "content": "hi"}]}\\n'
            (raw / "dialogues" / "support" / f"c{i}.jsonl").write_text(line % i)
        settings = Settings(raw_root=raw, data_root=Path(sys.argv[1]) / "data")
        settings = replace(settings, ingest_workers=2, ingest_batch_files=1)
        assert ingest_source("dialogue", settings, "run-1").n_bronze == 4
        pool = workers.worker_pool(2)
        parse_workers = set(pool._pool._processes)
        for pid, names in sorted(set(pool.map(heavy_imports, [0.5] * 4))):
            print("parse worker" if pid in parse_workers else "other", names)
        pool.shutdown()
"""


def _run(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        cwd=PROJECT,
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_parse_workers_import_neither_pandera_nor_pandas(tmp_path):
    done = _run(tmp_path, PARSE_IN_WORKERS)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["parse worker -", "parse worker -"], done.stdout


PYARROW_ASKED_ONCE = """
    import sys
    from datetime import UTC, datetime
    import pyarrow as pa
    from pipelines.runtime.workers import pyarrow_without_pandas_sniffing

    pyarrow_without_pandas_sniffing()
    rows = [{"n": 1, "at": datetime(2026, 1, 2, tzinfo=UTC), "tags": ["a"]}]
    table = pa.Table.from_pylist(rows)
    print("pandas" in sys.modules, table.num_rows)
    print(table.to_pandas().shape, "pandas" in sys.modules)
"""


def test_pyarrow_converts_lists_without_importing_pandas_and_imports_it_when_asked_for(tmp_path):
    done = _run(tmp_path, PYARROW_ASKED_ONCE)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["False 1", "(1, 3) True"], done.stdout
