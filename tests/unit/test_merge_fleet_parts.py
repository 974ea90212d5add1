"""The pure parts of pickfs fleet: inventory parsing, Ansible's events, the playbooks, a host job's outcome,
per-host device confirmation and the fleet's status."""

import json

from pickfs.errors import EXIT_INTERRUPTED
from pickfs.fleet.ansible import parse_event
from pickfs.fleet.controller import device_problem, fleet_status
from pickfs.fleet.hostside import last_line, outcome
from pickfs.fleet.inventory import InventoryHost, parse_inventory
from pickfs.fleet.playbooks import APT_PACKAGES, extra_vars, run_playbook, stop_playbook
from pickfs.model import Plan, Target
from pickfs.stack.presets import PRESETS
from pickfs.store.fleets import FleetHost


def test_inventory_hosts_come_in_the_inventorys_order_with_their_variables():
    doc = {"_meta": {"hostvars": {"ci": {"pickfs_workdir": "/srv/pickfs"}, "dev": {}, "db2": {"x": 1}}},
           "all": {"children": ["ungrouped", "boxes"]}, "boxes": {"children": ["db"], "hosts": ["dev", "ci"]},
           "db": {"hosts": ["db2", "ci"]}, "ungrouped": {"hosts": []}}
    hosts = parse_inventory(doc)
    assert [h.name for h in hosts] == ["dev", "ci", "db2"]
    assert hosts[1].workdir == "/srv/pickfs" and hosts[0].workdir == "/var/tmp/pickfs"


def test_ansible_events_and_their_one_line_errors():
    e = parse_event(json.dumps({"event": "failed", "host": "b", "task": "install pickfs",
                                "result": {"rc": 1, "stderr": "Collecting x\nERROR: No matching distribution\n"}}))
    assert (e.kind, e.host, e.message()) == ("failed", "b", "ERROR: No matching distribution")
    assert parse_event(json.dumps({"event": "unreachable", "host": "d", "result": {"msg": "timed out"}})).message() \
        == "timed out"
    assert parse_event("[WARNING]: something").kind == "output"
    failed = parse_event(json.dumps({"event": "failed", "task": "t", "result": {"rc": 3}}))
    assert failed.message() == "t failed (exit 3)"


def test_the_playbooks_poll_an_async_job_and_fetch_before_failing():
    (play,) = json.loads(run_playbook())
    tasks = [u for t in play["tasks"] for u in [t, *t.get("block", [])]]  # the job's tasks are in a block
    names = [t["name"] for t in tasks]
    start = tasks[names.index("start the plan")]
    assert start["poll"] == 0 and start["async"]  # an async job, polled by the next task
    poll = tasks[names.index("progress")]
    assert "until" in poll and "retries" in poll and "delay" in poll
    assert names.index("fetch the results") < names.index("the outcome")  # a failed host's results are kept too
    assert names.index("prepare the job") < names.index("start the plan")
    (stop,) = json.loads(stop_playbook(fetch=True))
    assert [t["name"] for t in stop["tasks"]][1:3] == ["stop the plan", "undo what is left"]
    assert json.loads(extra_vars(fleet_id="f"))["apt_packages"] == list(APT_PACKAGES)


def test_a_host_jobs_outcome_from_its_exit_code_and_output():
    log = "run x: 2 configurations\n\x1b[31merror:\x1b[0m work directory /w is a symbolic link (move it away)\n"
    assert outcome(0, log) == ("complete", "")
    assert outcome(2, log) == ("failed", "work directory /w is a symbolic link (move it away)")
    assert outcome(EXIT_INTERRUPTED, "error: interrupted: 8 measured runs kept\n")[0] == "interrupted"
    assert outcome(1, "") == ("failed", "exited 1")
    assert last_line("a\n\n  b  \n\n") == "b"


def test_a_device_target_runs_only_where_the_inventory_confirms_that_exact_device():
    plan = Plan(Target(kind="device", device="/dev/sdb"), (PRESETS["ext4"],), ())
    assert "does not confirm" in device_problem(plan, InventoryHost("a"))
    assert "is not the plan's device" in device_problem(plan, InventoryHost("a", {"pickfs_confirm_device": "/dev/sdc"}))
    assert device_problem(plan, InventoryHost("a", {"pickfs_confirm_device": "/dev/sdb"})) is None
    assert device_problem(Plan(Target(), (PRESETS["ext4"],), ()), InventoryHost("a")) is None


def test_the_fleets_status_from_its_hosts():
    ok, bad = FleetHost("a", "complete"), FleetHost("b", "failed", error="x")
    assert fleet_status([ok, ok]) == "complete"
    assert fleet_status([ok, bad]) == "partial"
    assert fleet_status([bad]) == "failed"
    assert fleet_status([ok, FleetHost("c", "interrupted")]) == "interrupted"
