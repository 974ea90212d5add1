"""Fuzz, beyond plans (test_plan_fuzz.py): fingerprints for `env diff`, Ansible inventories, plans stored in a
results file, database settings given with --set, and path arguments through links an unprivileged user planted.

Every case must end with exit code 0 or 2 (one line naming the fix), never an internal error; the path cases
also prove, by sha256, that nothing outside the planted area changed. Seeded, so a failure names its case.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import sqlite3
import stat
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from pickfs.databases.values import SHAPES
from pickfs.errors import PlanError
from pickfs.store import ResultStore
from pickfs.workloads import REGISTRY
from tests.records import fill, make_plan, record_dict
from tests.unit.test_plan_fuzz import HUGE, STRINGS, mutate, random_value
from tests.unit.test_plan_validation import pickfs

SEED = 20261123
RUN = "20260101-000000-abcd"
NOBODY = 65534
INJECTIONS = ["$(touch /tmp/pickfs-fuzz-inj)", "`touch /tmp/pickfs-fuzz-inj`", "; touch /tmp/pickfs-fuzz-inj",
              " -c fsync=off", "\n-c fsync=off", "' -c x='", '" --x="', "on\x00", "128MB\n", "a b", "|id", "&&id",
              "../../etc/passwd", "128MB -c fsync=off"]


def one_line_or_ok(code: int, err: str, codes: tuple[int, ...] = (2,)) -> bool:
    if "internal error" in err or "Traceback" in err:
        return False
    if code == 0:
        return True
    lines = [line for line in err.splitlines() if line.strip()]
    return code in codes and len(lines) == 1 and lines[0].startswith("error:")


# -- env diff ---------------------------------------------------------------------------------------
def fingerprint_mutants(rng: random.Random, n: int) -> list[bytes]:
    base = {"mount.fstype": "ext4", "mount.effective.barrier": "1", "host.kernel": "6.1", "dev.sda.rotational": "0"}
    out: list[bytes] = []
    for _ in range(n):
        kind = rng.choice(["value", "value", "wrap", "bytes", "deep", "text"])
        if kind == "value":
            d: Any = copy.deepcopy(base)
            d[rng.choice([*base, "x", ""])] = random_value(rng)
            out.append(json.dumps(d if rng.random() < 0.5 else {"fingerprint": d}).encode())
        elif kind == "wrap":
            out.append(json.dumps(random_value(rng)).encode())
        elif kind == "bytes":
            out.append(bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 7, 300]))))
        elif kind == "deep":
            depth = rng.choice([10, 1000, 100000])
            out.append((rng.choice(["[", '{"a":']) * depth).encode())
        else:
            out.append(rng.choice([b"1e999", b"NaN", b"-Infinity", b'{"k": "[/bold]"}', b'"\\ud800"', b"null"]))
    return out


def test_env_diff_of_fuzzed_fingerprints_is_one_line(tmp_path, capsys):
    rng = random.Random(SEED)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"mount.fstype": "xfs"}))
    failures = []
    for i, data in enumerate(fingerprint_mutants(rng, 80)):
        f = tmp_path / "fp.json"
        f.write_bytes(data)
        for args in (["env", "diff", str(f), str(good)], ["env", "diff", str(good), str(f)]):
            code, _, err = pickfs(args, capsys)
            if not one_line_or_ok(code, err):
                failures.append(f"{i}: {data[:80]!r}: exit {code}: {err.strip()[:200]}")
    assert not failures, "\n".join(failures[:5])


# -- inventories -------------------------------------------------------------------------------------
INVENTORIES = ["[web]\nhost1 ansible_connection=local\n", "all:\n  hosts:\n    a:\n      ansible_connection: local\n"]


def inventory_mutants(rng: random.Random, n: int) -> list[tuple[str, bytes]]:
    out = []
    for _ in range(n):
        i = rng.randrange(len(INVENTORIES))
        text = INVENTORIES[i]
        op = rng.choice(["cut", "insert", "bytes", "host"])
        if op == "cut":
            text = text[: rng.randint(0, len(text))]
        elif op == "insert":
            at = rng.randint(0, len(text))
            text = text[:at] + rng.choice(["[", "]", ":", "\t", "- ", "{", "'", "=", "\n  x", "&a", "*a"]) + text[at:]
        elif op == "host":
            text = text.replace("host1", rng.choice(["h?st", "h st", "-x", "a*b", "h\u00e9", "ok-host"]))
            text = text.replace("    a:", rng.choice(["    'a b':", "    '[x':", "    b:"]))
        data = text.encode()
        if op == "bytes":
            data = data + bytes(rng.randrange(256) for _ in range(8))
        out.append(("hosts.yml" if i else "hosts.ini", data))
    return out


def test_fuzzed_inventories_give_hosts_or_one_line(tmp_path):
    from pickfs.fleet.inventory import ansible_tool, list_hosts

    try:
        ansible_tool("ansible-inventory")
    except Exception:
        if os.environ.get("CI"):
            raise
        pytest.skip("Ansible is not installed")
    rng = random.Random(SEED)
    failures = []
    for i, (name, data) in enumerate(inventory_mutants(rng, 10)):  # each one starts ansible-inventory: ~1 s
        f = tmp_path / name
        f.write_bytes(data)
        try:
            hosts = list_hosts(str(f))
            assert hosts and all(h.name for h in hosts)
        except PlanError as exc:
            if "\n" in exc.one_line() or "no hosts" in exc.message and b"host" in data and b"[" not in data:
                failures.append(f"{i}: {data!r}: {exc.one_line()}")
        except Exception as exc:  # anything else is an internal error
            failures.append(f"{i}: {data!r}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures[:5])


# -- plans stored in a results file ------------------------------------------------------------------
def test_fuzzed_stored_plans_are_one_line_in_every_reading_command(tmp_path, capsys):
    rng = random.Random(SEED)
    base = record_dict(make_plan())
    f = tmp_path / "r.db"
    fill(ResultStore(f), make_plan(), RUN).__class__  # noqa: B018 (the run is what is fuzzed)
    conn = sqlite3.connect(f)
    failures = []
    started = time.monotonic()
    for i in range(int(os.environ.get("PICKFS_FUZZ_STORED", "60"))):
        data = copy.deepcopy(base)
        for _ in range(rng.choice([1, 1, 2, 3])):
            data = mutate(data, rng)
        text = json.dumps(data) if rng.random() < 0.9 else rng.choice(["null", "[]", "{", "1e999", '"x"', ""])
        host: dict[str, Any] = {"hostname": "box", "kernel": "6.1", "fingerprint": {"mount.fstype": "ext4"},
                                "tools": {"fio": "3.33"}}
        if rng.random() < 0.4:  # the host record too
            where = rng.choice([host, host["fingerprint"], host["tools"]])
            where[rng.choice(["hostname", "fingerprint", "tools", "mount.fstype", "fio", "x"])] = random_value(rng)
            text = json.dumps(base)
        conn.execute("UPDATE runs SET plan_json=?, host_json=?", (text, json.dumps(host)))
        conn.commit()
        for args in (["results"], ["report", RUN], ["report", RUN, "--json", "-"], ["compare", RUN, RUN],
                     ["env", "diff", RUN, RUN], ["report", RUN, "--html", str(tmp_path / "r.html")]):
            code, _, err = pickfs([*args, "--results", str(f)], capsys)
            if not one_line_or_ok(code, err, (1, 2)):  # 1: a run without a fingerprint to compare (NotFound)
                failures.append(f"{i} {args[0]}: {text[:150]}: exit {code}: {err.strip()[:200]}")
    conn.close()
    assert not failures, f"{len(failures)} failed:\n" + "\n".join(failures[:5])
    assert time.monotonic() - started < 90


# -- database settings through --set ------------------------------------------------------------------
def workloads_with(key: str) -> list[str]:
    return sorted(n for n, cls in REGISTRY.items() if key in cls.setting_names() and n != "command")


@pytest.mark.parametrize("key", sorted(SHAPES))
def test_fuzzed_database_settings_never_reach_a_server_unless_of_their_shape(tmp_path, capsys, key):
    rng = random.Random(f"{SEED}-{key}")
    names = workloads_with(key)
    assert names, key
    values = INJECTIONS + [str(v) for v in STRINGS + HUGE] + \
        [rng.choice(["128MB", "on", "1", "fsync"]) + rng.choice(INJECTIONS) for _ in range(6)]
    failures = []
    for value in values:
        for name in names:
            args = ["run", "--dry-run", "--fs", "ext4", "--workload", name, "--set", f"{key}={json.dumps(value)}",
                    "--workdir", str(tmp_path / "wd"), "--results", str(tmp_path / "r.db")]
            code, _, err = pickfs(args, capsys)
            if not one_line_or_ok(code, err):
                failures.append(f"{name} {key}={value!r}: exit {code}: {err.strip()[:200]}")
            elif code == 0 and value.strip() and not SHAPES[key].accepts(value.lower() if value.lower() in (
                    "on", "off") else value):
                failures.append(f"{name} {key}={value!r} was accepted")
            if code == 0 and any(c in value for c in " \t\n$`;|&'\"\\\x00"):
                failures.append(f"{name} {key}={value!r}: a shell character was accepted")
    assert not failures, "\n".join(failures[:5])
    assert not os.path.exists("/tmp/pickfs-fuzz-inj")


# -- path arguments through links planted by an unprivileged user ------------------------------------
def as_nobody(*argv: str) -> None:
    subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", *argv], check=True)


def tree_state(root: Path) -> dict[str, str]:
    """Every entry under `root`: its mode, owner and (for files) the sha256 of its bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else ""
            out[str(p.relative_to(root))] = f"{st.st_mode:o} {st.st_uid} {digest}"
    st = root.lstat()
    out["."] = f"{st.st_mode:o} {st.st_uid}"
    return out


@pytest.fixture
def planted(tmp_path):
    """Canaries of root's, and an area of nobody's holding links to them (made as nobody)."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            raise AssertionError("the planted-link fuzz needs root")
        pytest.skip("needs root")
    tag = uuid.uuid4().hex[:8]
    canary = Path(f"/var/tmp/pickfs-test-canary-{tag}")
    area = Path(f"/var/tmp/pickfs-test-area-{tag}")
    canary.mkdir(mode=0o755)
    (canary / "secret").write_bytes(os.urandom(64))
    (canary / "empty").write_bytes(b"")
    (canary / "dir").mkdir(mode=0o755)
    (canary / "dir" / "keep").write_bytes(b"mine")
    (canary / "emptydir").mkdir(mode=0o755)
    area.mkdir(mode=0o755)
    os.chown(area, NOBODY, NOBODY)
    links = {"file": canary / "secret", "empty": canary / "empty", "dir": canary / "dir",
             "emptydir": canary / "emptydir", "dangling": canary / "new", "etc": Path("/etc")}
    for name, target in links.items():
        as_nobody("ln", "-s", str(target), str(area / name))
    results = tmp_path / "r.db"
    store = ResultStore(results)
    fill(store, make_plan(), RUN)
    store.close()
    try:
        yield canary, area, results
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", str(canary), str(area)], check=False)


PATH_FORMS = ["{l}", "{l}/sub", "{l}/sub/x.db", "{l}/x.html"]
PATH_COMMANDS = [
    ["report", RUN, "--results", "{r}", "--html", "{p}"], ["report", RUN, "--results", "{r}", "--json", "{p}"],
    ["report", RUN, "--results", "{r}", "--markdown", "{p}"], ["report", RUN, "--results", "{r}", "--csv", "{p}"],
    ["report", "--results", "{r}", "--site", "{p}"], ["results", "--workdir", "{p}"], ["results", "--results", "{p}"],
    ["report", "--results", "{p}"], ["merge", "{r}", "--results", "{p}"], ["compare", RUN, RUN, "--results", "{r}",
                                                                             "--results-b", "{p}"],
    ["env", "/proc", "--json", "{p}"], ["run", "--dry-run", "--fs", "ext4", "--workdir", "{p}"],
    ["run", "--dry-run", "--fs", "ext4", "--results", "{p}"],
]


def test_path_arguments_through_planted_links_change_nothing_of_roots(planted, capsys):
    canary, area, results = planted
    before_canary, before_etc = tree_state(canary), hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    rng = random.Random(SEED)
    cases = [(cmd, form.format(l=area / link)) for cmd in PATH_COMMANDS for form in PATH_FORMS
             for link in ("file", "empty", "dir", "emptydir", "dangling", "etc")]
    rng.shuffle(cases)
    failures = []
    started = time.monotonic()
    for cmd, path in cases[:90]:
        args = [a.format(r=results, p=path) for a in cmd]
        code, _, err = pickfs(args, capsys)
        if not one_line_or_ok(code, err) and not (code == 1 and "no results database" in err):
            failures.append(f"{' '.join(args)}: exit {code}: {err.strip()[:200]}")
        if tree_state(canary) != before_canary:
            failures.append(f"{' '.join(args)}: changed {canary}")
            break
    assert not failures, "\n".join(failures[:5])
    assert tree_state(canary) == before_canary
    assert hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest() == before_etc
    assert not any(p.name.startswith(".pickfs") for p in Path("/etc").iterdir())
    assert time.monotonic() - started < 120


@pytest.mark.parametrize("table", ['[target]\nworkdir = "{p}"', '[method]\ncrash_keep = "{p}"'])
def test_plan_check_judges_planted_work_and_keep_directories_without_touching_them(planted, capsys, tmp_path,
                                                                                       table):
    canary, area, _ = planted
    before = tree_state(canary)
    for link in ("dir", "emptydir", "dangling", "etc"):
        plan = tmp_path / "p.toml"
        plan.write_text('fs = ["ext4"]\n' + table.format(p=area / link / "sub") + "\n")
        code, _, err = pickfs(["plan", "check", str(plan)], capsys)
        assert code == 2 and "symbolic link owned by uid 65534" in err, err
    assert tree_state(canary) == before
