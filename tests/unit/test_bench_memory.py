"""bench/measure.py: the tree's peak PSS counts the pages a forked child shares with its parent
once, where the summed RSS counts them in both processes."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from measure import run_measured

MB = 2**20
# 300 MB touched, then a fork that writes nothing: both processes map the same 300 MB
FORK_SHARING = """
import os, time
block = bytearray(300 * 2**20)
for i in range(0, len(block), 4096):
    block[i] = 1
if os.fork() == 0:
    time.sleep(3)
    os._exit(0)
time.sleep(3)
os.wait()
"""


def test_pages_a_forked_child_shares_count_once_in_the_peak_pss(tmp_path):
    m = run_measured(
        "fork",
        [sys.executable, "-c", FORK_SHARING],
        env={},
        cwd=tmp_path,
        log_path=tmp_path / "log",
        timeout_s=60,
    )
    assert m.returncode == 0
    assert m.peak_rss_mb > 600  # 300 MB in each process's RSS
    assert 300 <= m.peak_pss_mb < 400  # 300 MB once, and the interpreters
