"""The team store: runs kept in a real PostgreSQL server (started here) instead of the SQLite file, through the
same commands; the same schema version; merging into it twice adds nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pickfs.services.postgresql import bindir
from tests.conftest import IS_ROOT
from tests.records import fill, make_plan

if os.environ.get("CI") and (bindir() is None or not IS_ROOT):
    pytest.fail("the PostgreSQL store test needs root and postgresql (./bootstrap.sh installs it)", pytrace=False)
pytestmark = pytest.mark.skipif(bindir() is None or not IS_ROOT, reason="needs root and postgresql")


def as_postgres(*argv: str) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv]


@pytest.fixture
def server():
    """A private PostgreSQL server on a Unix socket only; stopped and removed afterwards."""
    bins = bindir()
    root = Path("/var/tmp") / f"pickfs-pgstore-{uuid.uuid4().hex[:8]}"
    root.mkdir(mode=0o755)
    shutil.chown(root, "postgres", "postgres")
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    shutil.chown(sock, "postgres", "postgres")
    started = False
    try:
        subprocess.run(as_postgres(str(bins / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-N"),
                       check=True, capture_output=True)
        subprocess.run(as_postgres(str(bins / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
                                   f"-c listen_addresses='' -c unix_socket_directories={sock} -c fsync=off", "start"),
                       check=True, capture_output=True)
        started = True
        subprocess.run(as_postgres(str(bins / "createdb"), "-h", str(sock), "-U", "postgres", "pickfs"),
                       check=True, capture_output=True)
        yield f"postgresql://postgres@/pickfs?host={sock}"
    finally:
        if started:
            subprocess.run(as_postgres(str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"),
                           capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def pickfs(*args: str, workdir: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pickfs", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PICKFS_WORKDIR": str(workdir), "CI": "1", **env})


def test_runs_merged_into_postgresql_are_reported_and_merging_twice_adds_nothing(server, tmp_path):
    from pickfs.store import ResultStore
    from pickfs.store.postgres import PostgresStore
    from pickfs.store.results import SCHEMA_VERSION

    dev, ci = ResultStore(tmp_path / "dev.db"), ResultStore(tmp_path / "ci.db")
    fill(dev, make_plan(), run_id="20260101-000000-de00", host={"hostname": "dev", "name": "dev"})
    fill(ci, make_plan(), run_id="20260101-000000-c100", host={"hostname": "ci", "name": "ci"},
         values={0: [125, 130, 120], 1: [2000, 2100, 1900], 2: [60, 61, 62]})
    first = pickfs("merge", str(tmp_path / "dev.db"), str(tmp_path / "ci.db"), "--results", server, workdir=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("1 new run(s)") == 2
    again = pickfs("merge", str(tmp_path / "dev.db"), str(tmp_path / "ci.db"), "--results", server, workdir=tmp_path)
    assert again.stderr.count("nothing new") == 2, again.stderr

    listed = pickfs("results", workdir=tmp_path, PICKFS_RESULTS=server)  # the environment variable works too
    assert listed.returncode == 0 and "20260101-000000-de00" in listed.stdout and "c100" in listed.stdout
    assert "postgresql://" in listed.stdout
    report = pickfs("report", "20260101-000000-c10", "--json", "-", "--results", server, workdir=tmp_path)
    assert report.returncode == 0, report.stderr
    doc = json.loads(report.stdout)
    assert doc["host"]["name"] == "ci"
    compared = pickfs("compare", "20260101-000000-de00", "20260101-000000-c100", "--results", server,
                      workdir=tmp_path)
    assert compared.returncode == 0 and "slower in B" in compared.stdout  # ext4 and xfs at an eighth of their speed in B

    store = PostgresStore(server)
    try:
        assert store.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == \
            str(SCHEMA_VERSION)
        record = store.load("20260101-000000-de00")
        assert record.created == dev.load("20260101-000000-de00").created  # 8-byte floats, not PostgreSQL's REAL
        assert len(record.trials) == len(dev.load("20260101-000000-de00").trials)
    finally:
        store.close()


def test_a_database_that_is_not_pickfs_s_is_refused_unchanged(server, tmp_path):
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    r = pickfs("results", "--results", server, workdir=tmp_path)
    assert r.returncode == 2 and "not a pickfs results database" in r.stderr and "Traceback" not in r.stderr
    with psycopg.connect(server, autocommit=True) as conn:
        tables = {row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema='public'")}
    assert tables == {"invoices"}


def test_an_unreachable_server_is_one_line_naming_the_fix(tmp_path):
    r = pickfs("results", "--results", f"postgresql://nobody@/pickfs?host={tmp_path}", workdir=tmp_path)
    assert r.returncode == 2 and "cannot use the results database" in r.stderr and "Traceback" not in r.stderr
