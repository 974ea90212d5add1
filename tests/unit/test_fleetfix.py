"""Issue 16's review of the fleet code: host work directories checked, inventory values quoted, host results
checked before they are merged, source databases read-only, report links escaped (pure, or a temporary file)."""

import json
import os
import sqlite3

import pytest

from pickfs.analysis.run import analyse
from pickfs.fleet.playbooks import APT_PACKAGES, run_playbook, stop_playbook
from pickfs.model import RunRecord
from pickfs.report.sections import report_of
from pickfs.report.site import comparison_page, index_page
from pickfs.store import ResultStore
from pickfs.store.merge import check_run_id, merge_runs, plan_merge
from pickfs.store.sqlitefile import OPEN_HERE
from tests.records import fill, make_plan


def tasks(text):
    (play,) = json.loads(text)
    out = []
    for t in play["tasks"]:
        out.append(t)
        for part in ("block", "rescue"):
            out += t.get(part, [])
    return out


def test_run_ids_are_only_those_pickfs_makes():
    assert check_run_id("20260101-000000-abcd") == "20260101-000000-abcd"
    for bad in ("../../etc/x", "20260101-000000-ABCD", "20260101-000000-abcd\n", "fleet-20260101-000000-abcd",
                "20260101-000000-abcd' onclick='x", "", None, 7):
        with pytest.raises(ValueError):
            check_run_id(bad)


def test_a_run_with_an_id_pickfs_does_not_make_is_refused(tmp_path):
    src = ResultStore(tmp_path / "src.db")
    fill(src, make_plan(), run_id="x'><script>")
    with pytest.raises(ValueError):
        plan_merge(src.load("x'><script>"), None)
    with pytest.raises(ValueError):
        merge_runs(ResultStore(tmp_path / "dest.db"), src)


def test_merging_a_source_database_leaves_its_bytes_unchanged(tmp_path):
    path = tmp_path / "theirs.db"
    src = ResultStore(path)
    run_id = fill(src, make_plan())
    src.close()
    OPEN_HERE.discard(str(path.resolve()))  # as if another pickfs had written it
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    source = ResultStore.read_only(path)
    try:
        assert merge_runs(ResultStore(tmp_path / "sub" / "mine.db"), source).runs_added == [run_id]
    finally:
        source.close()
    assert path.read_bytes() == before["theirs.db"]
    # SQLite's read-only connection to a WAL database leaves an empty log (and its index) beside it: nothing in it
    assert not (tmp_path / "theirs.db-wal").exists() or (tmp_path / "theirs.db-wal").stat().st_size == 0


def test_a_source_database_of_an_older_schema_is_read_in_memory_never_migrated(tmp_path):
    path = tmp_path / "old.db"
    store = ResultStore(path)
    fill(store, make_plan())
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    conn.commit()
    conn.execute("PRAGMA journal_mode=DELETE")  # folds the log into the file: no side file left
    conn.close()
    before = path.read_bytes()
    source = ResultStore.read_only(path)
    assert source.list_runs() and source.list_fleets() == []
    source.close()
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["old.db"]


def test_the_host_work_directory_is_checked_before_it_is_used():
    ts = tasks(run_playbook())
    names = [t["name"] for t in ts]
    for var in ("pf_workdir", "pf_dir"):
        look = ts[names.index(f"look at {var}")]
        assert look["ansible.builtin.stat"] == {"path": f"{{{{ {var} }}}}", "follow": False}
        check = ts[names.index(f"look at {var}") + 1]["ansible.builtin.assert"]
        (cond,) = check["that"]
        st = look["register"] + ".stat"
        for word in (f"not {st}.exists", f"{st}.isdir", f"not {st}.islnk", f"{st}.uid == 0", f"not {st}.wgrp",
                     f"not {st}.woth"):
            assert word in cond
        assert "symbolic link" in check["fail_msg"] and "move it aside" in check["fail_msg"]
        assert "pickfs_workdir" in check["fail_msg"]
    make = ts[names.index("make pickfs's directories")]["ansible.builtin.file"]
    assert (make["owner"], make["group"], make["follow"]) == ("root", "root", False)
    assert names.index("look at pf_dir") < names.index("make pickfs's directories")


def test_inventory_values_in_shell_scripts_are_quoted():
    text = run_playbook()
    shells = [t["ansible.builtin.shell"] for t in tasks(text) if "ansible.builtin.shell" in t]
    assert "(pickfs_extra_packages | default([]))) | map('quote') | join(' ')" in shells[0].splitlines()[0]
    assert "{% raw %}" in shells[0] and "policy-rc.d" in shells[0]  # install_quietly.sh, not templated
    for var in ("pf_system_python", "pf_venv", "pf_dir", "wheel", "tree_hash"):
        assert f"{{{{ {var} }}}}" not in shells[1] and f"{{{{ {var} | quote }}}}" in shells[1]


def test_the_fleet_packages_are_bootstraps():
    from pathlib import Path

    text = (Path(__file__).parents[2] / "bootstrap.sh").read_text()
    def group(name):
        return text.split(f"PKG_{name}=(", 1)[1].split(")", 1)[0].split()

    assert list(APT_PACKAGES) == group("BASE") + group("SERVERS") + group("CRASH")  # what a host runs needs


def test_a_fleets_stop_stops_its_own_job_and_cleanup_stops_every_one():
    def stop_argv(text):
        return next(t for t in tasks(text) if t["name"] == "stop the plan")["ansible.builtin.command"]["argv"]

    own = stop_argv(stop_playbook(fetch=True, one_job=True))
    assert own[own.index("--dir") + 1] == "{{ pf_job }}"
    assert "--dir" not in stop_argv(stop_playbook(fetch=False))


def test_site_links_are_escaped(tmp_path):
    store = ResultStore(tmp_path / "r.db")
    fill(store, make_plan(), run_id="20260101-000000-abcd")
    rec = store.load("20260101-000000-abcd")
    odd = analyse(RunRecord(**{**rec.__dict__, "id": "x'><script>alert(1)</script>"}))
    page = index_page([report_of(odd)], {})
    assert "<script>alert" not in page and "href='run-x&#x27;&gt;&lt;script&gt;" in page
    assert "<script>alert" not in comparison_page([odd, odd])


def test_pickfs_merge_of_a_damaged_file_is_one_line_and_changes_nothing(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "theirs.db"
    theirs = ResultStore(path)
    fill(theirs, make_plan())
    theirs.close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE runs SET plan_json='{bad'")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    p = subprocess.run([sys.executable, "-m", "pickfs", "merge", str(path), "--workdir", str(tmp_path / "w"),
                        "--results", str(tmp_path / "mine.db")], capture_output=True, text=True)
    assert p.returncode == 2 and "damaged run" in p.stderr and "Traceback" not in p.stderr
    assert path.read_bytes() == before


def test_a_resumed_fleet_confirms_each_hosts_device_again_and_needs_its_plan_copy(tmp_path, monkeypatch):
    from pickfs.errors import PlanError
    from pickfs.fleet import controller as ctl
    from pickfs.fleet.inventory import InventoryHost
    from pickfs.model import Plan, Target
    from pickfs.stack.presets import PRESETS
    from pickfs.store.fleets import FleetHost

    class Quiet:
        def __init__(self):
            self.lines = []

        def host(self, name, text):
            self.lines.append(f"{name}: {text}")

        def note(self, text):
            self.lines.append(text)

    plan = Plan(Target(kind="device", device="/dev/sdb"), (PRESETS["ext4"],), ())
    monkeypatch.setattr(ctl, "list_hosts", lambda inventory, limit: [
        InventoryHost("a", {ctl.CONFIRM_VAR: "/dev/sdc"}), InventoryHost("b")])
    monkeypatch.setattr(ctl, "load_plan_file", lambda path: plan)
    monkeypatch.setattr(ctl.FleetController, "_run_hosts", lambda self, todo, copy: pytest.fail("ran"))
    store = ResultStore(tmp_path / "results.db")
    store.create_fleet("fleet-20260101-000000-abcd", {}, "hosts.ini",
                       [FleetHost("a", "interrupted"), FleetHost("b", "failed", error="x")])
    observer = Quiet()
    c = ctl.FleetController(store, str(tmp_path / "w"), "hosts.ini", None, observer)
    with pytest.raises(PlanError):  # its work directory is gone: made again, but the plan copy is not there
        c.run(None, resume="fleet-20260101-000000-abcd")
    assert (c.base / "fleet-20260101-000000-abcd").is_dir()
    (c.base / "fleet-20260101-000000-abcd" / "plan.toml").write_text("")
    record = c.run(None, resume="fleet-20260101-000000-abcd")
    errors = {h.name: h.error for h in record.hosts}
    assert "is not the plan's device" in errors["a"] and "does not confirm" in errors["b"]
    assert record.status == "failed"


def test_a_job_past_its_time_is_stopped_undone_and_fetched_and_the_host_fails():
    (play,) = json.loads(run_playbook())
    (job,) = [t for t in play["tasks"] if "block" in t]
    assert [t["name"] for t in job["block"]][:2] == ["start the plan", "progress"]
    rescue = [t["name"] for t in job["rescue"]]
    assert rescue == ["stop the plan", "undo what is left", "fetch the results", "fetch the log", "the job failed"]
    stop = job["rescue"][0]["ansible.builtin.command"]["argv"]
    assert stop[stop.index("--dir") + 1] == "{{ pf_job }}"
    assert "ansible.builtin.fail" in job["rescue"][-1]
    start = job["block"][0]["ansible.builtin.command"]["argv"]
    assert start[start.index("--timeout") + 1] == "{{ job_timeout | default(0) }}"


def test_hostside_start_keeps_the_time_limit_with_sigterm_and_its_child_in_its_own_session(tmp_path, monkeypatch):
    import argparse
    import os
    import sys

    from pickfs.fleet import hostside

    child = tmp_path / "child"
    child.write_text(f"#!{sys.executable}\n" + (
        "import os, signal, sys, time\n"
        f"open({str(tmp_path / 'sid')!r}, 'w').write(str(os.getsid(0)))\n"
        "def term(*a):\n"
        f"    open({str(tmp_path / 'term')!r}, 'w').write('1'); print('error: interrupted'); sys.exit(130)\n"
        "signal.signal(signal.SIGTERM, term)\n"
        "time.sleep(30)\n"))
    child.chmod(0o755)
    monkeypatch.setattr(hostside.sys, "executable", str(child))
    job = tmp_path / "job"
    job.mkdir()
    a = argparse.Namespace(dir=str(job), workdir=str(tmp_path), plan="p.toml", name="h", fleet="f",
                           confirm_device="", resume="no", timeout=1.0)
    try:
        assert hostside.start(a) == 1
    finally:
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    st = hostside.read_status(job)
    assert st["state"] == "failed" and "did not end within 1 s" in st["error"]
    assert (tmp_path / "term").exists() and int((tmp_path / "sid").read_text()) != os.getsid(0)


def test_the_controller_merges_only_its_fleets_runs_and_a_malformed_host_file_fails_that_host(tmp_path):
    from pickfs.fleet.controller import FleetController
    from pickfs.store.fleets import FleetHost

    class Quiet:
        def host(self, name, text):
            pass

        def note(self, text):
            pass

    store = ResultStore(tmp_path / "results.db")
    c = FleetController(store, str(tmp_path / "w"), "hosts.ini", None, Quiet())
    c.fleet_id, c.work = "fleet-20260101-000000-abcd", tmp_path / "work"
    c.hosts = {"a": FleetHost("a", "complete"), "b": FleetHost("b", "complete")}
    a = ResultStore(c.work / "hosts" / "a" / "results.db")
    fill(a, make_plan(), run_id="20260101-000000-aaaa", host={"hostname": "a", "fleet": c.fleet_id})
    fill(a, make_plan(), run_id="20260101-000000-bbbb", host={"hostname": "a", "fleet": "fleet-other"})
    a.close()
    b = ResultStore(c.work / "hosts" / "b" / "results.db")
    fill(b, make_plan(), run_id="20260101-000000-cccc", host={"hostname": "b", "fleet": c.fleet_id})
    b.conn.execute("UPDATE runs SET plan_json='{bad'")
    b.close()
    c._merge(["a", "b"])
    assert store.run_ids() == {"20260101-000000-aaaa"} and c.hosts["a"].run_id == "20260101-000000-aaaa"
    assert c.hosts["b"].status == "failed" and "could not be merged" in c.hosts["b"].error
    assert "\n" not in c.hosts["b"].error


def test_a_local_connection_host_gets_the_systems_python_unless_it_names_one(tmp_path):
    from pickfs.fleet.inventory import InventoryHost, local_interpreters, local_inventory

    hosts = [InventoryHost("a", {"ansible_host": "10.0.0.2"}),
             InventoryHost("l", {"ansible_connection": "local"}),
             InventoryHost("m", {"ansible_connection": "ansible.builtin.local"}),
             InventoryHost("n", {"ansible_connection": "local", "ansible_python_interpreter": "/opt/py/bin/python3"})]
    assert local_interpreters(hosts, "/usr/bin/python3") == {"l": "/usr/bin/python3", "m": "/usr/bin/python3"}
    path = local_inventory(hosts, tmp_path / "local.json")
    assert path is not None and set(json.loads(path.read_text())["all"]["hosts"]) == {"l", "m"}
    assert local_inventory(hosts[:1], tmp_path / "none.json") is None and not (tmp_path / "none.json").exists()
