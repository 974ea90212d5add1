"""The Ansible playbooks pickfs fleet runs, as data (pure). JSON is YAML, so Ansible reads them as written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pickfs.safepaths import MARKER

# What a host needs, as bootstrap.sh installs it for `./bootstrap.sh run` (keep the two lists together).
APT_PACKAGES = ("e2fsprogs", "xfsprogs", "btrfs-progs", "util-linux", "sqlite3", "python3-venv", "postgresql",
                "mariadb-server", "sysbench", "fio", "firebird3.0-server-core", "firebird3.0-server", "libfbclient2",
                "firebird3.0-utils", "libfuse3-3", "fuse3")

# Per host; the inventory may set pickfs_workdir, pickfs_confirm_device for a device target, pickfs_python, and
# pickfs_extra_packages (Debian packages a plan's own command needs there).
HOST_VARS = {
    "pf_workdir": "{{ pickfs_workdir | default('/var/tmp/pickfs') }}",
    "pf_dir": "{{ pf_workdir }}/fleet",
    "pf_job": "{{ pf_dir }}/{{ fleet_id }}",
    "pf_venv": "{{ pf_dir }}/venv",
    "pf_python": "{{ pf_venv }}/bin/python",
    "pf_confirm": "{{ pickfs_confirm_device | default('') }}",
    # the host's Python that pickfs's virtual environment is made from (Debian's, as bootstrap.sh uses)
    "pf_system_python": "{{ pickfs_python | default(ansible_python_interpreter | default('/usr/bin/python3')) }}",
}

# Installs what is missing (install_quietly.sh, as bootstrap.sh does: no system service of the packages started or
# enabled); a host that cannot reach a package registry fails naming what it lacks.
INSTALL_QUIETLY = Path(__file__).with_name("install_quietly.sh")


def _packages_script() -> str:
    """install_quietly.sh as a shell task's text (its stderr apart, for the error), the packages its arguments."""
    return ("set -- {{ (apt_packages + (pickfs_extra_packages | default([]))) | map('quote') | join(' ') }}\n"
            "{% raw %}" + INSTALL_QUIETLY.read_text() + "{% endraw %}")

_INSTALL_SCRIPT = (  # every inventory value quoted: this runs as root
    "set -e; {{ pf_system_python | quote }} -m venv {{ pf_venv | quote }}; "
    "{{ pf_venv | quote }}/bin/pip install -q --no-compile --disable-pip-version-check --no-index "
    "--find-links {{ pf_dir | quote }}/wheels {{ pf_dir | quote }}/wheels/{{ wheel | quote }}; "
    "{{ pf_venv | quote }}/bin/pip install -q --disable-pip-version-check --no-index --no-deps --force-reinstall "
    "{{ pf_dir | quote }}/wheels/{{ wheel | quote }}; touch {{ pf_venv | quote }}/.pickfs-{{ tree_hash | quote }}"
)

# pickfs runs root code from its work directory: one that exists must be root's own, a real directory, writable
# by root alone (the default is under world-writable /var/tmp, where anyone may have made it first).
def _check_dirs() -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = []
    for var, reg in (("pf_workdir", "pf_workdir_stat"), ("pf_dir", "pf_dir_stat")):
        st = f"{reg}.stat"
        why = (f"{{{{ 'is missing' if not {st}.exists else "  # (the message is made even when the check passes)
               f"'is a symbolic link' if {st}.islnk else 'is not a directory' if not {st}.isdir else "
               f"'is owned by uid ' ~ {st}.uid ~ ', not root' if {st}.uid != 0 else "
               f"'is writable by its group or others' }}}}")
        tasks += [
            {"name": f"look at {var}", "ansible.builtin.stat": {"path": f"{{{{ {var} }}}}", "follow": False},
             "register": reg},
            {"name": "pickfs's directories are root's own", "ansible.builtin.assert": {
                "that": [f"not {st}.exists or ({st}.isdir and not {st}.islnk and {st}.uid == 0 and "
                         f"not {st}.wgrp and not {st}.woth)"],
                "fail_msg": f"{{{{ {var} }}}} {why}: move it aside, or set pickfs_workdir for this host to a "
                            "directory root owns",
                "quiet": True}},
        ]
    return tasks


def _play(name: str, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": name, "hosts": "all", "gather_facts": False, "vars": HOST_VARS, "tasks": tasks}]


def _hostside(*args: str) -> list[str]:
    return ["{{ pf_python }}", "-m", "pickfs.fleet.hostside", *args]


def _fetch() -> list[dict[str, Any]]:
    return [
        {"name": "fetch the results", "ansible.builtin.fetch": {
            "src": "{{ pf_job }}/results.db", "dest": "{{ local_dir }}/{{ inventory_hostname }}/results.db",
            "flat": True, "fail_on_missing": False}},
        {"name": "fetch the log", "ansible.builtin.fetch": {
            "src": "{{ pf_job }}/log", "dest": "{{ local_dir }}/{{ inventory_hostname }}/log", "flat": True,
            "fail_on_missing": False}},
    ]


def _stop_tasks(one_job: bool, wait: str, installed: str | None) -> list[dict[str, Any]]:
    """Stop this fleet's job (one_job) or every fleet job here, then undo what is left (pickfs cleanup)."""
    job = ["--dir", "{{ pf_job }}"] if one_job else []
    when = {"when": installed} if installed else {}
    return [
        {"name": "stop the plan", "ansible.builtin.command": {"argv": _hostside(
            "stop", "--workdir", "{{ pf_workdir }}", *job, "--wait", wait)},
         **when, "changed_when": "'\"stopped\": []' not in pf_stop.stdout", "register": "pf_stop"},
        {"name": "undo what is left", "ansible.builtin.command": {"argv": [
            "{{ pf_venv }}/bin/pickfs", "cleanup", "--workdir", "{{ pf_workdir }}"]},
         **when, "register": "pf_cleanup", "changed_when": "'undid' in pf_cleanup.stderr"},
    ]


def run_playbook() -> str:
    """Install pickfs on each host, run the plan there as an async job, poll it, fetch its results."""
    final = "['complete', 'failed', 'interrupted', 'lost']"
    tasks: list[dict[str, Any]] = [
        {"name": "check the packages pickfs needs", "ansible.builtin.shell": _packages_script(),
         "changed_when": "'installed:' in pf_packages.stdout", "register": "pf_packages"},
        *_check_dirs(),
        {"name": "make pickfs's directories", "ansible.builtin.file": {
            "path": "{{ item.path }}", "state": "directory", "mode": "{{ item.mode }}", "owner": "root",
            "group": "root", "follow": False},
         "loop": [{"path": "{{ pf_workdir }}", "mode": "0711"}, {"path": "{{ pf_dir }}", "mode": "0700"},
                  {"path": "{{ pf_dir }}/wheels", "mode": "0700"}, {"path": "{{ pf_job }}", "mode": "0700"}]},
        # a work directory this play made is pickfs's: marked so, as pickfs marks the ones it makes itself
        {"name": "mark the work directory pickfs's", "ansible.builtin.file": {
            "path": f"{{{{ pf_workdir }}}}/{MARKER}", "state": "touch", "mode": "0600", "owner": "root",
            "group": "root", "follow": False, "modification_time": "preserve", "access_time": "preserve"},
         "when": "not pf_workdir_stat.stat.exists"},
        {"name": "is this pickfs installed", "ansible.builtin.stat": {"path": "{{ pf_venv }}/.pickfs-{{ tree_hash }}"},
         "register": "pf_installed"},
        {"name": "ship pickfs", "ansible.builtin.copy": {"src": "{{ wheels_dir }}/", "dest": "{{ pf_dir }}/wheels/",
                                                         "mode": "0600"},
         "when": "not pf_installed.stat.exists"},
        {"name": "install pickfs", "ansible.builtin.shell": _INSTALL_SCRIPT, "when": "not pf_installed.stat.exists"},
        {"name": "ship the plan", "ansible.builtin.copy": {"src": "{{ plan_path }}", "dest": "{{ pf_job }}/plan.toml",
                                                           "mode": "0600"}},
        {"name": "prepare the job", "ansible.builtin.command": {"argv": _hostside("prepare", "--dir", "{{ pf_job }}")},
         "changed_when": False},
        # A job past its time (or a poll that fails) is stopped, undone and fetched, and the host still fails.
        {"name": "the job", "block": [
            {"name": "start the plan", "ansible.builtin.command": {"argv": _hostside(
                "start", "--dir", "{{ pf_job }}", "--workdir", "{{ pf_workdir }}", "--plan", "{{ pf_job }}/plan.toml",
                "--name", "{{ inventory_hostname }}", "--fleet", "{{ fleet_id }}", "--confirm-device",
                "{{ pf_confirm }}", "--resume", "{{ resume }}", "--timeout", "{{ job_timeout | default(0) }}")},
             "async": "{{ async_timeout }}", "poll": 0, "register": "pf_started"},
            {"name": "progress", "ansible.builtin.command": {"argv": _hostside("status", "--dir", "{{ pf_job }}")},
             "register": "pf_status", "changed_when": False,
             "until": f"pf_status.rc == 0 and (pf_status.stdout | from_json).state in {final}",
             "retries": "{{ poll_retries }}", "delay": "{{ poll_delay }}"},
            *_fetch(),
        ], "rescue": [
            *_stop_tasks(one_job=True, wait="{{ stop_wait | default(120) }}", installed=None),
            *_fetch(),
            {"name": "the job failed", "ansible.builtin.fail": {
                "msg": "{{ ansible_failed_task.name | default('the job') }}: "
                       "{{ ansible_failed_result.msg | default('failed') }} (stopped, undone, results fetched)"}},
        ]},
        {"name": "the outcome", "ansible.builtin.fail": {"msg": "{{ (pf_status.stdout | from_json).error }}"},
         "when": "(pf_status.stdout | from_json).state != 'complete'"},
    ]
    return json.dumps(_play("pickfs fleet run", tasks), indent=1)


def stop_playbook(fetch: bool, one_job: bool = False) -> str:
    """Stop this fleet's job (one_job) or every pickfs fleet job on each host, undo what it left (pickfs cleanup),
    fetch what it measured."""
    tasks: list[dict[str, Any]] = [
        {"name": "is pickfs installed", "ansible.builtin.stat": {"path": "{{ pf_python }}"}, "register": "pf_py"},
        *_stop_tasks(one_job, "{{ stop_wait }}", "pf_py.stat.exists"),
    ]
    if fetch:
        tasks += _fetch()
    return json.dumps(_play("pickfs fleet cleanup", tasks), indent=1)


def extra_vars(**values: Any) -> str:
    return json.dumps({"apt_packages": list(APT_PACKAGES), **values})
