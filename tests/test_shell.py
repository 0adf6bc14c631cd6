"""`turnlake shell` as a user runs it: in a real pseudo-terminal (the standard library's `pty`)
and through a pipe, on a small warehouse whose rows are written here, so every expected value is
counted by hand."""

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest

EPISODES = pl.DataFrame({"episode_id": ["e1", "e2", "e3"], "source": ["study", "study", "oasst"]})
# rewards_by_rule by hand: r@1/episode: 1 row, 3 signals, reward 1.0;
# r@1/turn: 2 rows, 2 + 1 = 3 signals, min -0.5, mean 0.0, max 0.5.
TURN_REWARDS = pl.DataFrame(
    {
        "reward_rule": ["r@1", "r@1", "r@1"],
        "target": ["turn", "turn", "episode"],
        "n_signals": [2, 1, 3],
        "reward": [0.5, -0.5, 1.0],
    }
)
REWARDS_BY_RULE_CSV = (
    "reward_rule,target,rows,signals,min_reward,mean_reward,max_reward\n"
    "r@1,episode,1,3,1.0,1.0,1.0\n"
    "r@1,turn,2,3,-0.5,0.0,0.5\n"
)


@pytest.fixture
def data_root(tmp_path) -> Path:
    """A warehouse laid out as `write_views` lays it out: views over Parquet, a bronze schema."""
    root = tmp_path / "data"
    root.mkdir()
    with duckdb.connect(str(root / "warehouse.duckdb")) as con:
        con.execute("CREATE SCHEMA bronze")
        for name, frame in {"episodes": EPISODES, "turn_rewards": TURN_REWARDS}.items():
            path = tmp_path / f"{name}.parquet"
            frame.write_parquet(path)
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
        con.execute("CREATE VIEW bronze.pairs AS SELECT 1 AS pair")
    return root


def shell_args(data_root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pipelines.cli", "shell", "--data-root", str(data_root), *extra]


def pipe(data_root: Path, text: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        shell_args(data_root, *extra),
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_piped_statements_run_in_order_and_an_error_does_not_stop_the_rest(data_root):
    done = pipe(
        data_root,
        "SELECT count(*) AS n\nFROM episodes\nWHERE source = 'study';\nSELEC 1;\n"
        "SELECT count(*) AS oasst FROM episodes WHERE source = 'oasst';\n",
        "--csv",
    )
    assert done.stdout == "n\n2\noasst\n1\n"
    assert done.stderr.startswith("Error: Parser Error") and done.stderr.count("\nError") == 0
    assert done.returncode == 1


def test_piped_saved_query_by_name_gives_the_hand_computed_result(data_root):
    done = pipe(data_root, ".mode csv\n.run rewards_by_rule\n")
    assert (done.stdout, done.stderr, done.returncode) == (REWARDS_BY_RULE_CSV, "", 0)


def test_piped_statement_without_final_semicolon_still_runs(data_root):
    done = pipe(data_root, "SELECT 40 + 2 AS answer", "--csv")
    assert (done.stdout, done.returncode) == ("answer\n42\n", 0)


def test_connection_is_read_only(data_root):
    done = pipe(data_root, "CREATE TABLE sneaky (a INT);\n")
    assert "read-only" in done.stderr and done.returncode == 1
    with duckdb.connect(str(data_root / "warehouse.duckdb"), read_only=True) as con:
        tables = con.sql("SELECT table_name FROM information_schema.tables").fetchall()
    assert sorted(t for (t,) in tables) == ["episodes", "pairs", "turn_rewards"]


def test_missing_warehouse_is_exit_2_with_a_message(tmp_path):
    done = pipe(tmp_path / "nowhere", "SELECT 1;\n")
    assert done.returncode == 2 and "turnlake shell: no warehouse at" in done.stderr
    assert "Traceback" not in done.stderr


class Terminal:
    """A process on the far side of a pseudo-terminal: what a user types, what they see."""

    def __init__(self, args: list[str]) -> None:
        self.fd, child_fd = pty.openpty()
        self.proc = subprocess.Popen(
            args, stdin=child_fd, stdout=child_fd, stderr=child_fd, close_fds=True
        )
        os.close(child_fd)
        self.seen = ""

    def expect(self, pattern: str, timeout: float = 60) -> str:
        """Read until `pattern` (a regex, DOTALL) appears; returns the text up to its end."""
        deadline = time.monotonic() + timeout
        while not (found := re.search(pattern, self.seen, re.DOTALL)):
            ready, _, _ = select.select([self.fd], [], [], max(0, deadline - time.monotonic()))
            assert ready, f"no {pattern!r} in {timeout}s; the terminal shows:\n{self.seen}"
            self.seen += os.read(self.fd, 65536).decode("utf-8", "replace")
        shown, self.seen = self.seen[: found.end()], self.seen[found.end() :]
        return shown

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def close(self) -> int:
        os.write(self.fd, b"\x04")  # Ctrl-D
        code = self.proc.wait(timeout=60)
        os.close(self.fd)
        return code


PROMPT = re.escape("turnlake> ")


def test_in_a_terminal_the_shell_prompts_continues_lines_and_survives_errors(data_root):
    term = Terminal(shell_args(data_root))
    term.expect("read-only.*" + PROMPT)
    term.type("SELECT count(*) AS n_study")
    term.expect(re.escape("...> "))  # the statement goes on until `;`
    term.type("FROM episodes WHERE source = 'study';")
    term.expect(r"n_study.*│ 2 +│.*\(1 rows\).*" + PROMPT)
    term.type("SELECT * FROM nowhere;")
    term.expect("Error: Catalog Error.*" + PROMPT)  # still in the shell after the error
    term.type(".tables")
    term.expect(r"episodes.*turn_rewards.*bronze\.pairs.*" + PROMPT)
    term.type(".schema turn_rewards")
    term.expect(r"reward_rule +┆ VARCHAR.*n_signals +┆ BIGINT.*reward +┆ DOUBLE.*" + PROMPT)
    term.type(".mode csv")
    term.type(".run rewards_by_rule")
    term.expect(re.escape(REWARDS_BY_RULE_CSV.replace("\n", "\r\n")) + ".*" + PROMPT)
    assert term.close() == 0
