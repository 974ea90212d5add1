import subprocess
import sys

from pickfs.stack.cleanup import holding, undo_all
from pickfs.stack.ledger import Ledger, process_state


def dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_record_update_release(tmp_path):
    led = Ledger(tmp_path / "ledger")
    e = led.record("dir", path=str(tmp_path / "x"))
    e = led.update(e, extra=1)
    [got] = led.entries()
    assert got.kind == "dir" and got.get("extra") == 1
    assert led.orphans() == []  # this process is alive
    led.release(e)
    assert led.entries() == []


def test_orphans_of_a_dead_process_are_undone(tmp_path):
    led = Ledger(tmp_path / "ledger")
    target = tmp_path / "made-by-dead-pickfs"
    target.mkdir()
    (target / "file").write_text("x")
    e = led.record("dir", path=str(target), recursive=True)
    import json
    path = led.directory / f"{e.id}.json"
    data = json.loads(path.read_text())
    data["pid"] = dead_pid()
    path.write_text(json.dumps(data))
    orphans = led.orphans()
    assert len(orphans) == 1
    assert undo_all(led, orphans) == []
    assert not target.exists() and led.entries() == []


def test_holding_undoes_even_on_error(tmp_path):
    led = Ledger(tmp_path / "ledger")
    made = tmp_path / "d"
    try:
        with holding(led, "dir", path=str(made)):
            made.mkdir()
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert not made.exists() and led.entries() == []


def _owned_by(led, pid, created=None):
    import json
    e = led.record("dir", path="/nonexistent-pickfs-test")
    path = led.directory / f"{e.id}.json"
    data = json.loads(path.read_text())
    data["pid"] = pid
    if created is not None:
        data["created"] = created
    path.write_text(json.dumps(data))


def test_a_killed_pickfs_not_yet_reaped_is_gone(tmp_path):
    """Right after kill -9 the owner is a zombie until its parent reaps it: `pickfs cleanup` said its
    resources 'belong to a pickfs still running'."""
    import os
    import signal
    import time
    led = Ledger(tmp_path / "ledger")
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _owned_by(led, p.pid)
        assert led.orphans() == []  # alive
        os.kill(p.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while process_state(p.pid) != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert [e.pid for e in led.orphans()] == [p.pid]  # a zombie, not reaped: gone
    finally:
        p.kill()
        p.wait()


def test_a_pid_reused_by_a_later_process_is_not_the_owner(tmp_path):
    import os
    import time
    led = Ledger(tmp_path / "ledger")
    _owned_by(led, os.getpid(), created=time.time() - 3 * 86400)  # written before this process started
    assert [e.pid for e in led.orphans()] == [os.getpid()]
