"""A crash state's check of embedded Firebird on a database whose torn page lost old record versions (real engine, real
processes, database files damaged as a torn 8 KiB page leaves them; no root needed).

Reading such a database made the engine meet the lost version in whichever of its threads got there first: the check's
own, or its garbage collector beside it (which the check's reads had handed the old versions to). The internal
consistency check that followed ('cannot find record back version') shut the engine's page cache down under the other
thread, and the same state's check then failed, passed, hung until its time limit or aborted its process, from one run
to the next: the fast-check comparison's Firebird case failed now and then, once after 120 s."""

import inspect
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pickfs import databases
from pickfs.crash.client import clients
from pickfs.crash.runner import CHECK_TIMEOUT_S, DB_STEM, Commits
from pickfs.databases.firebird import engine_env, fbclient, firebird_unavailable
from pickfs.stack.ledger import Ledger
from tests.conftest import ledger_entries

pytestmark = pytest.mark.skipif(firebird_unavailable() is not None, reason=str(firebird_unavailable()))

PAGE = 8192  # the page size of the databases the commits client makes (Firebird 3's default)
ACCOUNTS_ID = 128  # the first table the commits client creates: pickfs_accounts
DATA_PAGE, TIP_PAGE = 5, 3  # Firebird's page types: a table's data, the transaction inventory
DEAD = 2  # a transaction's state in the inventory: 0 active, 1 limbo, 2 dead, 3 committed
TRANSACTIONS = 40


def options(db: Path) -> list[str]:
    return ["--backend", "firebird", "--db", str(db), "--fb-client", fbclient() or "libfbclient.so.2"]


def client(step: str, db: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pickfs.clients.commits", step, *options(db), *extra],
                          capture_output=True, text=True, env={**os.environ, **env}, timeout=120, check=True)


def made(tmp_path: Path) -> tuple[Path, dict[str, str], int]:
    """A commits database whose every account was then updated (the balances' sum kept) by a transaction that
    committed while an older snapshot still needed the accounts' old versions, the process then ended without
    closing anything (as a power cut ends it): each account has an old version that is garbage once the database
    opens again. With that transaction's number."""
    data = tmp_path / "made"
    data.mkdir()
    db, env = data / f"{DB_STEM}.fdb", engine_env(tmp_path / "made-lock")
    client("load", db, env)
    client("run", db, env, "--acks", str(tmp_path / "acks.log"), "--transactions", str(TRANSACTIONS))
    held = f"""
import os
from firebird.driver import connect, driver_config
driver_config.fb_client_library.value = {fbclient()!r}
old = connect({str(db)!r}, user="SYSDBA")
old.main_transaction.begin()
old.cursor().execute("SELECT SUM(balance) FROM pickfs_accounts").fetchall()
new = connect({str(db)!r}, user="SYSDBA")
new.main_transaction.begin()
cur = new.cursor()
cur.execute("UPDATE pickfs_accounts SET balance = balance + IIF(MOD(id, 2) = 0, 1, -1)")
cur.execute("SELECT CURRENT_TRANSACTION FROM RDB$DATABASE")
print(cur.fetchone()[0])
new.commit()
os._exit(0)
"""
    out = subprocess.run([sys.executable, "-c", held], capture_output=True, text=True, env={**os.environ, **env},
                         timeout=120, check=True).stdout
    return db, env, int(out.split()[-1])


def pages(raw: bytes, kind: int) -> list[int]:
    return [n for n in range(len(raw) // PAGE) if raw[n * PAGE] == kind]


def old_versions(raw: bytes) -> list[tuple[int, int, int]]:
    """(transaction, page, line) of each account's old version, from the accounts' data pages: a data page's header
    (16 bytes), its sequence, table and count of slots, then (offset, length) per slot; a record's header: its
    transaction, then its old version's page and line."""
    found = []
    for n in pages(raw, DATA_PAGE):
        _, table, count = struct.unpack_from("<IHH", raw, n * PAGE + 16)
        if table != ACCOUNTS_ID:
            continue
        for line in range(count):
            offset, _ = struct.unpack_from("<HH", raw, n * PAGE + 24 + 4 * line)
            if offset:
                transaction, back_page, back_line = struct.unpack_from("<IIH", raw, n * PAGE + offset)
                if back_page:
                    found.append((transaction, back_page, back_line))
    return found


def torn(db: Path, updater: int, dead: bool) -> Path:
    """A copy of the database with every account's old version lost (its slot emptied, as a torn page that kept its
    new half leaves it); `dead`: the updating transaction unfinished at the power cut as well (dead in the
    inventory), so a read of the accounts needs the lost versions."""
    raw = bytearray(db.read_bytes())
    versions = old_versions(bytes(raw))
    assert len(versions) >= 50 and {t for t, _, _ in versions} == {updater}, versions[:5]
    for _, back_page, back_line in versions:
        struct.pack_into("<HH", raw, back_page * PAGE + 24 + 4 * back_line, 0, 0)
    if dead:
        (tip,) = pages(bytes(raw), TIP_PAGE)[:1]
        at = tip * PAGE + 20 + updater // 4  # after the page's header and the next inventory page's number
        shift = 2 * (updater % 4)
        raw[at] = (raw[at] & ~(3 << shift)) | (DEAD << shift)
    out = db.with_name(f"torn-{'dead' if dead else 'committed'}.fdb")
    out.write_bytes(bytes(raw))
    return out


def copy_of(src: Path, where: Path) -> Path:
    where.mkdir()
    db = where / f"{DB_STEM}.fdb"
    db.write_bytes(src.read_bytes())
    return db


def one_shot_check(db: Path, env: dict[str, str]) -> tuple[dict, float]:
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "pickfs.clients.commits", "check", *options(db)],
                         capture_output=True, text=True, env={**os.environ, **env}, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), time.monotonic() - t0


def test_lost_old_versions_of_committed_rows_give_one_verdict_every_time(tmp_path):
    """The old versions are garbage: the check reads the rows' current versions (every commit present, the balances
    whole), gfix -v names the broken version chains, the same every time; before, the engine's garbage collector
    met the lost versions beside the check, and the check failed, passed or hung from one run to the next."""
    db, _, updater = made(tmp_path)
    src = torn(db, updater, dead=False)
    env = engine_env(tmp_path / "lock")
    answers, slowest = [], 0.0
    for k in range(8):
        doc, seconds = one_shot_check(copy_of(src, tmp_path / f"one-{k}"), env)
        answers.append(doc)
        slowest = max(slowest, seconds)
    with clients(Ledger(tmp_path / "ledger"), tmp_path / "client.err", tmp_path / "home") as standing:
        for k in range(8):
            t0 = time.monotonic()
            answers.append(standing.ask("firebird", env, options(copy_of(src, tmp_path / f"kept-{k}")), 60))
            slowest = max(slowest, time.monotonic() - t0)
        (process,) = standing.by_key.values()
        assert process.started == 1
    assert all(a == answers[0] for a in answers), [a for a in answers if a != answers[0]][:2]
    assert "query_error" not in answers[0] and "ends" not in answers[0], answers[0]
    assert answers[0]["present"] == list(range(1, TRANSACTIONS + 1)) and answers[0]["invariant"] == "ok"
    assert slowest < 30, slowest
    # the state is damaged all the same: gfix -v finds what the check's reads left alone
    datadir = copy_of(src, tmp_path / "judged").parent
    opened, consistent, present, problem = Commits("firebird", {}).check(datadir, None, tmp_path, {}, 0)
    assert opened and consistent is False and present == set(range(1, TRANSACTIONS + 1)), problem
    assert "gfix -v" in problem, problem
    assert ledger_entries(tmp_path) == []


def test_a_check_whose_engine_fails_on_the_database_answers_and_its_process_ends(tmp_path):
    """The rows' current versions are of a transaction the power cut left unfinished: a read needs the lost old
    versions and the engine's internal consistency check stops it, in the check's own thread. The answer is out
    before the connection the engine failed on would be closed (which could hang or abort the process), and the
    process ends without closing it; the next state is checked by a new process."""
    db, _, updater = made(tmp_path)
    src = torn(db, updater, dead=True)
    env = engine_env(tmp_path / "lock")
    doc, seconds = one_shot_check(copy_of(src, tmp_path / "one"), env)
    assert doc.get("query_error") and doc.get("ends") is True and seconds < 30, doc
    with clients(Ledger(tmp_path / "ledger"), tmp_path / "client.err", tmp_path / "home") as standing:
        failed = standing.ask("firebird", env, options(copy_of(src, tmp_path / "kept-0")), 60)
        assert failed == doc
        (process,) = standing.by_key.values()
        assert process.proc is None, "the process whose engine failed is still up"
        sound = standing.ask("firebird", env, options(copy_of(db, tmp_path / "kept-1")), 60)
        assert "query_error" not in sound and "ends" not in sound, sound
        assert sound["present"] == list(range(1, TRANSACTIONS + 1)) and sound["invariant"] == "ok"
        assert process.started == 2 and process.proc is not None
    # the crash test's verdict: the database opened and is damaged; the commits read before the failure count
    datadir = copy_of(src, tmp_path / "judged").parent
    opened, consistent, present, problem = Commits("firebird", {}).check(datadir, None, tmp_path, {}, 0)
    assert opened and consistent is False and problem.startswith("database: "), problem
    assert ledger_entries(tmp_path) == []


def test_a_read_the_engine_fails_while_fetching_says_the_engines_own_words(tmp_path):
    """The lost old versions a read needs are met while the check fetches the accounts' sum, not when its query
    starts: the engine's message is the problem (before, the fetch's error was taken for "no rows", and the problem
    read "IndexError: list index out of range")."""
    db, _, updater = made(tmp_path)
    doc, _ = one_shot_check(copy_of(torn(db, updater, dead=True), tmp_path / "one"), engine_env(tmp_path / "lock"))
    assert doc["query_error"].startswith("DatabaseError: internal Firebird consistency check"), doc
    assert "cannot find record back version" in doc["query_error"], doc


def test_gfix_has_the_checks_own_limit_and_running_out_of_it_fails_the_check(tmp_path):
    """gfix -v is part of a state's check: the crash runner calls it without a limit, and it gets the check's own
    (CHECK_TIMEOUT_S), not the 600 s of any program; a validation that runs out of it is a failed check that says
    so, not an error read as "database would not start" (real gfix on a real database, run out of a limit too short
    for any validation)."""
    fb = databases.get("firebird")
    assert inspect.signature(fb.outside_check).parameters["timeout"].default == CHECK_TIMEOUT_S
    data = tmp_path / "data"
    data.mkdir()
    env = engine_env(tmp_path / "lock")
    client("load", data / f"{DB_STEM}.fdb", env)
    assert fb.outside_check(data, DB_STEM, env) == ([], [])
    errors, warnings = fb.outside_check(data, DB_STEM, env, timeout=0.01)
    assert errors == ["validation did not finish within 0.01 s, a state's check's limit: it hung"] and not warnings
