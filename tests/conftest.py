import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from filelock import FileLock

from pipelines.config.settings import Settings
from pipelines.orchestration.instance import read_migration_scripts_once
from pipelines.runtime.collector import collect_less
from tests.clean_env import without_turnlake_settings
from tests.forked import ForkedTurnlake

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


HOLD_LOCK = (
    "import sys, time; from pathlib import Path; from pipelines.storage.lock import "
    "data_root_lock\n"
    "from pipelines.storage.layout import Layout\n"
    "with data_root_lock(Layout(Path(sys.argv[1]))):\n"
    "    print('held', flush=True); time.sleep(float(sys.argv[2]))\n"
)


@pytest.fixture
def lock_held_elsewhere():
    """Start a process that holds a data root's lock; yields it (kill it to release)."""
    import subprocess
    import sys

    started = []

    def hold(data_root: Path, seconds: float = 600) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(data_root), str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout.readline().strip() == "held"
        started.append(proc)
        return proc

    yield hold
    for proc in started:
        proc.kill()
        proc.wait()


TMPFS = Path("/dev/shm")
# The run's temporary folders (tmp_path and friends: every data root a test builds) go to tmpfs
# where it has this much room: the builds fsync their atomic writes (Delta commits, releases,
# DuckDB), which on a disk leave the cores idle; a whole run peaked at 0.5 GB there (measured).
TMPFS_ROOM_FOR_BASETEMP = 4 * 1024**3
IN_MEMORY_BASETEMP = pytest.StashKey[Path]()


def _tmpfs_room() -> int:
    if not (TMPFS.is_dir() and os.access(TMPFS, os.W_OK)):
        return 0
    stat = os.statvfs(TMPFS)
    return stat.f_bavail * stat.f_frsize


@pytest.hookimpl(tryfirst=True)  # before pytest's tmp_path plugin reads --basetemp
def pytest_configure(config: pytest.Config) -> None:
    """Without --basetemp, the run's temporary folder is a new one on tmpfs (where there is room);
    pytest-xdist's workers take theirs under the controller's. Every test process runs builds
    in-process as a `turnlake` process does, so its collector is set as the console script sets
    it (pipelines/cli/entry.py): with Python's default, ~7 % of a build test's CPU went to
    collections walking Dagster's and the libraries' objects again and again."""
    collect_less()
    if config.option.basetemp or hasattr(config, "workerinput"):
        return
    if _tmpfs_room() >= TMPFS_ROOM_FOR_BASETEMP:
        config.option.basetemp = tempfile.mkdtemp(prefix="turnlake-pytest-", dir=TMPFS)
        config.stash[IN_MEMORY_BASETEMP] = Path(config.option.basetemp)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The tmpfs folder is memory: removed after the run (pass --basetemp to keep a run's)."""
    if folder := config.stash.get(IN_MEMORY_BASETEMP, None):
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
    """Collection with bytecode writing allowed, even where PYTHONDONTWRITEBYTECODE is set (as in
    .ci/run's images): pytest then keeps each test module it rewrote for its assertions in
    __pycache__. Without, every pytest-xdist worker rewrites and compiles every test module again
    (~5 s of CPU apiece, measured); with, the workers after the first mostly read the first's.
    Only while collecting: the tests themselves run as the environment says."""
    dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = dont_write


@pytest.fixture(scope="session", autouse=True)
def migration_scripts_read_once() -> None:
    """Dagster's storages in this process share one reading of Alembic's migration scripts
    (tests/alembic_scripts.py)."""
    read_migration_scripts_once()


@pytest.fixture(scope="session")
def new_dagster_home(tmp_path_factory) -> Iterator[Callable[[], Path]]:
    """Makes empty Dagster homes, in memory (tmpfs) where there is one: Dagster's SQLite event log
    commits each event (hundreds per build), and on a disk every commit waits for an fsync."""
    in_memory = TMPFS.is_dir() and os.access(TMPFS, os.W_OK)
    with tempfile.TemporaryDirectory(
        prefix="turnlake-dagster-", dir=TMPFS if in_memory else tmp_path_factory.getbasetemp()
    ) as parent:

        def make() -> Path:
            home = Path(tempfile.mkdtemp(dir=parent))
            (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
            return home

        yield make


@pytest.fixture(scope="session")
def forked_turnlake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkedTurnlake]:
    """Runs `turnlake` commands in processes of their own without importing Dagster each time
    (tests/forked.py): for the tests that SIGKILL a command at a crash point."""
    forks = ForkedTurnlake(tmp_path_factory.mktemp("forked"))
    yield forks
    forks.close()


@dataclass(frozen=True)
class BuiltOnce:
    """Folders that take a build to make, made once per test run and shared by every pytest-xdist
    worker (pytest-xdist's documented pattern: a file lock in the run's common temp folder)."""

    cache: Path

    def get(self, name: str, make: Callable[[Path], None]) -> Path:
        """The folder `make(folder)` fills; the first worker to ask makes it while holding a lock,
        the others wait and reuse it. `name` must say everything `make` depends on. Read-only:
        `copy` it before changing it."""
        folder, done = self.cache / name, self.cache / f"{name}.done"
        with FileLock(self.cache / f"{name}.lock"), pytest.MonkeyPatch.context() as env:
            # The first test to ask makes the folder for every test: the `TURNLAKE_*` settings
            # of that test's fixtures (a config with profiles, a key) must not reach it. `make`
            # sets what it depends on itself, and `name` says so.
            without_turnlake_settings(env)
            if not done.exists():
                shutil.rmtree(folder, ignore_errors=True)  # a make that failed half-way
                make(folder)
                done.touch()
        return folder

    def copy(self, name: str, make: Callable[[Path], None], to: Path) -> Path:
        """A private copy at `to` of the folder `get` gives (symlinks kept as they are)."""
        shutil.copytree(self.get(name, make), to, symlinks=True)
        return to


@pytest.fixture(scope="session")
def built_once(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> BuiltOnce:
    base = tmp_path_factory.getbasetemp()
    # under xdist every worker's basetemp is a child of the run's own temp folder
    cache = (base if worker_id == "master" else base.parent) / "built-once"
    cache.mkdir(exist_ok=True)
    return BuiltOnce(cache)


def build_demo(data_root: Path, dagster_home: Path) -> None:
    """`turnlake build --demo-if-empty` (through the CLI and Dagster) into `data_root`."""
    from pipelines.cli.main import main

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DAGSTER_HOME", str(dagster_home))
        without_turnlake_settings(mp)
        # Exit 0 means every blocking check passed, leakage and release verification included.
        args = ["build", "--data-root", str(data_root), "--demo-if-empty", "--log-level", "WARNING"]
        assert main(args) == 0


def _build_demo_warehouse(folder: Path) -> None:
    """`folder`/data built by `build_demo`, with the Dagster home that recorded its run beside it
    (`folder`/dagster): tests/test_cli.py reads that run."""
    home = folder / "dagster"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    build_demo(folder / "data", home)


@pytest.fixture(scope="session")
def demo_warehouse(tmp_path_factory, built_once) -> Path:
    """The data root of ONE `turnlake build --demo-if-empty` (built once per test run, copied
    to each worker: a test that writes a report there writes to its own worker's copy), shared
    read-only by every test that needs realistic built data."""
    root = tmp_path_factory.mktemp("demo_warehouse")
    built = built_once.get("demo-warehouse", _build_demo_warehouse)
    return Path(shutil.copytree(built / "data", root / "data", symlinks=True))


@pytest.fixture(scope="module")
def demo_warehouse_and_home(tmp_path_factory, built_once) -> tuple[Path, Path]:
    """A private copy of `demo_warehouse`'s build that a module's tests may change: (data root,
    the Dagster home that recorded its build run)."""
    root = tmp_path_factory.mktemp("demo_warehouse")
    built = built_once.copy("demo-warehouse", _build_demo_warehouse, root / "built")
    return built / "data", built / "dagster"


@dataclass
class RedactorCalls:
    texts: list[str] = field(default_factory=list)  # every text `Redactor.redact` was given
    only: list[frozenset[str] | None] = field(
        default_factory=list
    )  # the detectors asked for, per call


@pytest.fixture
def redactor_calls(monkeypatch) -> RedactorCalls:
    """Records the calls of `Redactor.redact` in this process (it still redacts)."""
    from pipelines.privacy.redact import Redactor

    calls = RedactorCalls()
    real = Redactor.redact

    def spy(self, text, only=None):
        calls.texts.append(text)
        calls.only.append(None if only is None else frozenset(only))
        return real(self, text, only)

    monkeypatch.setattr(Redactor, "redact", spy)
    return calls


# The longest test files (seconds each: summed setup, call and teardown of a whole run with three
# workers on 2 loaded cores, 2026-11-30: about twice CI's), scheduled first, longest
# first: the workers get whole files (`pytest_xdist_make_scheduler` below) in collection order
# (`--no-loadscope-reorder`; by default pytest-xdist reorders them by their number of tests), so a
# long file collected last (tests/unit and tests/trainers come last) would keep one worker busy
# after the other has finished. The two kill files share one world (`built_once`): they are not
# next to each other, so that one worker does not sit waiting for the other to build it. The S3
# files and the partition tests share one demo build (`demo_built(built_once, 1)`).
LONGEST_FIRST = (
    "tests/s3/test_data_root.py",  # with test_raw_root.py (`SAME_WORKER`): ~355 s
    "tests/s3/test_raw_root.py",
    "tests/graph/test_code_change_soundness.py",  # ~320 s
    "tests/operation/test_kill_build.py",  # ~205 s
    "tests/graph/test_partitions_graph.py",  # ~185 s
    "tests/deploy/test_postgres.py",  # ~115 s, mostly waiting on the server
    "tests/graph/test_build_nochange.py",  # ~110 s
    "tests/conformance/test_decision_rules.py",  # ~105 s
    "tests/graph/test_silver_partition_runs.py",  # ~80 s
    "tests/graph/test_release_partitions.py",
    "tests/deploy/test_build_workers.py",
    "tests/graph/test_forget.py",
    "tests/graph/test_check_steps.py",
    "tests/unit/test_silver_assembly.py",
    "tests/operation/test_kill_build_late.py",  # ~60 s
    "tests/graph/test_release_chunks.py",
    "tests/deploy/test_multiprocess.py",
    "tests/conformance/test_study_rules.py",
    "tests/conformance/test_dialogue_rules.py",
    "tests/unit/test_privacy_prefilter.py",
    "tests/trainers/test_trl_trainers.py",
    "tests/robustness/test_fuzz_properties.py",
    "tests/graph/test_release_as_of_latest.py",
    "tests/graph/test_split_raters_graph.py",
    "tests/test_cli.py",  # ~40 s
    "tests/test_api.py",
    "tests/conformance/test_release_rules.py",
    "tests/test_run_history.py",
    "tests/conformance/test_settings_rules.py",
    "tests/conformance/test_social_rl_learning_loop.py",
    "tests/graph/test_release_private_reuse.py",
    "tests/graph/test_release_as_of.py",
    "tests/robustness/test_adversarial.py",
    "tests/unit/test_night_partitions.py",  # ~30 s
)


# Files that must run on the same worker, as one unit: both S3 files use one S3 build of the
# demo (`demo_on_s3`, on this worker's moto server), which would otherwise be made twice.
SAME_WORKER = {"tests/s3/test_raw_root.py": "tests/s3/test_data_root.py"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    root = config.rootpath

    def order(item: pytest.Item) -> int:
        return rank.get(item.path.relative_to(root).as_posix(), len(rank))

    items.sort(key=order)  # stable: the rest keep their order


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadfile`, with the files of `SAME_WORKER` in one unit (tests/file_scheduling.py).
    Not `--dist loadgroup` with `xdist_group` marks: with pytest 9 and pytest-xdist 3.8 those marks
    do not reach the scheduler, which then hands out single tests, so a file's module fixtures
    are built on both workers."""
    from tests.file_scheduling import FileScheduling

    return FileScheduling(config, log, same_worker=SAME_WORKER)
