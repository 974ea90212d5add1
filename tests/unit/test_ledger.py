import subprocess
import sys

from pickfs.stack.cleanup import holding, undo_all
from pickfs.stack.ledger import Ledger


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
