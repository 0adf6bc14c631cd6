"""A real Postgres server for the instance tests: initdb + pg_ctl on a free 127.0.0.1 port."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
PG_USER = "turnlake"
PG_PASSWORD = "turnlake-test-password"


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    password: str
    db: str

    def env(self) -> dict[str, str]:
        """The TURNLAKE_PG_* variables deploy/postgres/dagster.yaml reads."""
        return {
            "TURNLAKE_PG_HOST": self.host,
            "TURNLAKE_PG_PORT": str(self.port),
            "TURNLAKE_PG_USER": self.user,
            "TURNLAKE_PG_PASSWORD": self.password,
            "TURNLAKE_PG_DB": self.db,
        }


def _pg_tool(name: str) -> str | None:
    for bin_dir in PG_BIN_DIRS:
        if (bin_dir / name).exists():
            return str(bin_dir / name)
    return shutil.which(name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres_user() -> list[str]:
    """Postgres refuses to run as root: run its tools as the `postgres` user then."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root and there is no `postgres` user to run Postgres as")
    return ["runuser", "-u", "postgres", "--"]


def _create_database(server: PostgresServer) -> None:
    import psycopg2

    conn = psycopg2.connect(
        host=server.host, port=server.port, user=server.user, password=server.password,
        dbname="postgres",
    )  # fmt: skip
    conn.autocommit = True  # CREATE DATABASE cannot run in a transaction
    with conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {server.db}")
    conn.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    initdb, pg_ctl = _pg_tool("initdb"), _pg_tool("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.skip(
            "Postgres binaries (initdb, pg_ctl) not found: install the Debian package "
            "`postgresql` (.ci/run does) to run the Postgres instance tests"
        )
    as_postgres = _as_postgres_user()
    # Not under pytest's tmp_path: the `postgres` user cannot enter root's private temp tree.
    base = Path(tempfile.mkdtemp(prefix="turnlake-pg-"))
    password_file = base / "password"
    password_file.write_text(PG_PASSWORD + "\n")
    if as_postgres:
        shutil.chown(base, user="postgres")
        shutil.chown(password_file, user="postgres")
    data, port = base / "data", _free_port()
    subprocess.run(
        [*as_postgres, initdb, "-D", str(data), "-U", PG_USER, "--auth=scram-sha-256",
         f"--pwfile={password_file}", "--no-sync", "-E", "UTF8", "--no-instructions"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    options = f"-h 127.0.0.1 -p {port} -k {base} -F"  # -F: no fsync, a throwaway server
    subprocess.run(
        [*as_postgres, pg_ctl, "-D", str(data), "-l", str(base / "log"), "-w", "-o", options,
         "start"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    try:
        server = PostgresServer("127.0.0.1", port, PG_USER, PG_PASSWORD, "dagster")
        _create_database(server)
        yield server
    finally:
        subprocess.run(
            [*as_postgres, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(base, ignore_errors=True)
