"""The test scheduler (tests/file_scheduling.py): a worker that crashes fails its test, and the run
goes on to the end instead of hanging (pytest-xdist 3.8's own scheduler waits forever here)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FILES = {
    "conftest.py": (
        "from tests.file_scheduling import FileScheduling\n"
        "def pytest_xdist_make_scheduler(config, log):\n"
        "    return FileScheduling(config, log, same_worker={'test_e.py': 'test_d.py'})\n"
    ),
    "pytest.ini": "[pytest]\n",
    "test_a.py": "def test_a1(): pass\ndef test_a2(): pass\n",
    "test_b.py": "import os\ndef test_b_crash(): os._exit(1)\ndef test_b_after(): pass\n",
    "test_c.py": "import time\ndef test_c1(): time.sleep(1)\n",
    "test_d.py": "import os\ndef test_d1(): open('d-pid', 'w').write(str(os.getpid()))\n",
    "test_e.py": "import os\ndef test_e1(): assert open('d-pid').read() == str(os.getpid())\n",
}


def test_a_crashed_worker_fails_its_test_and_the_run_still_ends(tmp_path):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile"]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *args, "--no-loadscope-reorder"],
            cwd=tmp_path,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired as hung:
        raise AssertionError(f"the run hung after a worker crashed:\n{hung.stdout}") from None
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 1, done.stdout
    # the crashed test failed once (not run again on the replacement worker); every other ran
    assert "1 failed, 6 passed" in summary, done.stdout
    assert "crashed while running 'test_b.py::test_b_crash'" in done.stdout
