"""Inputs pickfs reads: endless or huge files refused, odd JSON and inventories answered in one line."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from pickfs.errors import PlanError
from pickfs.fleet.inventory import list_hosts
from tests.unit.test_plan_validation import pickfs, refused

needs_ansible = pytest.mark.skipif(shutil.which("ansible-inventory") is None and not os.environ.get("CI")
                                   and not os.path.exists(os.path.join(os.path.dirname(os.sys.executable),
                                                                       "ansible-inventory")),
                                   reason="Ansible is not installed")


@pytest.mark.parametrize("args", [["plan", "check", "/dev/zero"], ["run", "--dry-run", "--plan", "/dev/zero"],
                                  ["plan", "check", "/dev/urandom"]])
def test_an_endless_plan_file_is_refused_not_read(capsys, args):
    refused(args, capsys, "not a regular file")


def test_a_fifo_or_a_huge_plan_is_refused(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused(["plan", "check", str(fifo)], capsys, "not a regular file")  # never blocks waiting for a writer
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (2 * 1024**2))
    refused(["plan", "check", str(big)], capsys, "more than")


FINGERPRINTS = ["[1, 2]", "null", '"s"', '{"fingerprint": 5}', "1e999", "[[[[]]]]", '{"a": {"b": 1}}',
                "[" * 100000, '{"fingerprint": {"k": [1]}}', "\xff\xfe binary"]


@pytest.mark.parametrize("text", FINGERPRINTS, ids=range(len(FINGERPRINTS)))
def test_env_diff_of_anything_but_a_fingerprint_is_one_line(tmp_path, capsys, text):
    a = tmp_path / "a.json"
    a.write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text else b"\xff\xfe binary")
    b = tmp_path / "b.json"
    b.write_text('{"k": "v"}')
    refused(["env", "diff", str(a), str(b)], capsys, "fingerprint")
    refused(["env", "diff", str(b), str(a)], capsys, "fingerprint")


def test_env_diff_shows_markup_as_text(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"fingerprint": {"mount.fstype": "[/bold]ext4", "[red]k": 1}}))
    b.write_text(json.dumps({"mount.fstype": "xfs"}))
    code, out, err = pickfs(["env", "diff", str(a), str(b)], capsys)
    assert code == 0, err
    assert "[/bold]ext4" in out and "[red]k" in out


@pytest.mark.parametrize("target", ["/tmp", "/dev/full"])
def test_writes_to_a_directory_or_a_device_are_refused_first(capsys, target):
    refused(["env", "/", "--json", target], capsys, target)
    refused(["report", "--json", target, "--results", "/nonexistent/r.db"], capsys, target)


def test_crashtest_check_is_a_command_line_even_when_it_looks_like_toml(monkeypatch, capsys):
    from pickfs.cli import crashtest

    seen = {}
    monkeypatch.setattr(crashtest, "execute_plan", lambda plan, o: seen.setdefault("plan", plan))
    for check in ("true", "1", "[1]", "{a = 1}", 'say "hi"'):
        seen.clear()
        code, _, err = pickfs(["crashtest", "--workload", "command", "--set", "command=./work", "--check", check],
                              capsys)
        assert code == 0, err
        assert seen["plan"].workloads[0].get("check") == check


@needs_ansible
@pytest.mark.parametrize("text,fragment", [
    ("[web\nhost1 ansible_host=1.2.3.4\n", "Failed to parse"),
    ("all:\n  hosts: [a, b\n", "Failed to parse"),
    ("[g]\nh?ost\n", "not a plain host name"),
])
def test_a_malformed_inventory_says_why_not_no_hosts(tmp_path, text, fragment):
    inv = tmp_path / ("hosts.yml" if text.startswith("all") else "hosts.ini")
    inv.write_text(text)
    with pytest.raises(PlanError, match="Failed to parse|not a plain host name") as err:
        list_hosts(str(inv))
    assert fragment in err.value.message and "no hosts" not in err.value.message


def test_an_inventory_that_is_a_device_or_not_utf8_is_refused(tmp_path):
    with pytest.raises(PlanError, match="not a regular file"):
        list_hosts("/dev/zero")
    bad = tmp_path / "hosts.ini"
    bad.write_bytes(b"[g]\nh\xff\xfeost\n")
    with pytest.raises(PlanError, match="not UTF-8"):
        list_hosts(str(bad))
