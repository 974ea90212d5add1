"""Paths pickfs writes to: no other user's link followed, no directory of the user's taken over or changed.

Run as root (as CI does): links are planted as `nobody` (uid 65534) would, with os.lchown.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pickfs.errors import UntrustedPath, UntrustedWorkdir
from pickfs.safepaths import MARKER, current_umask, invoking_user, own_dir, resolve, write_file
from pickfs.stack.workdir import prepare
from tests.unit.test_plan_validation import pickfs, refused

NOBODY = 65534
RUN = "20260101-000000-abcd"
as_root = pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("CI"), reason="needs root to plant links")


def plant_link(link: Path, target: Path) -> Path:
    link.symlink_to(target)
    if os.geteuid() == 0:
        os.lchown(link, NOBODY, NOBODY)
    return link


def snapshot(d: Path) -> tuple[int, list[str]]:
    return stat.S_IMODE(d.stat().st_mode), sorted(os.listdir(d))


@as_root
def test_a_link_of_another_user_in_the_middle_of_a_path_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    plant_link(tmp_path / "l", victim)
    with pytest.raises(UntrustedPath, match="symbolic link owned by uid 65534"):
        resolve(tmp_path / "l" / "sub" / "x", "--html")
    with pytest.raises(UntrustedWorkdir, match="symbolic link owned by uid 65534"):
        prepare(str(tmp_path / "l" / "sub"))
    with pytest.raises(UntrustedPath):
        write_file(tmp_path / "l" / "r.html", b"x", "--html")
    assert snapshot(victim) == (0o755, [])


def test_roots_own_links_are_followed(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "mine").symlink_to(real)
    assert resolve(tmp_path / "mine" / "a", "--json") == real / "a"
    write_file(tmp_path / "mine" / "a", b"data", "--json")
    assert (real / "a").read_bytes() == b"data" and stat.S_IMODE((real / "a").stat().st_mode) == 0o600


@as_root
def test_a_link_of_another_user_under_the_name_written_is_replaced_never_written_through(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"")
    plant_link(tmp_path / "out.html", target)
    write_file(tmp_path / "out.html", b"<html>", "--html")
    assert target.read_bytes() == b"" and not (tmp_path / "out.html").is_symlink()
    assert (tmp_path / "out.html").read_bytes() == b"<html>"
    dangling = plant_link(tmp_path / "d.json", tmp_path / "created-by-link")
    write_file(dangling, b"{}", "--json")
    assert not (tmp_path / "created-by-link").exists() and dangling.read_bytes() == b"{}"


def test_a_system_link_to_a_pipe_or_device_is_neither_replaced_nor_written(tmp_path):
    for name in ("/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/2", "/dev/full", "/sys/kernel/x"):
        before = os.readlink(name) if os.path.islink(name) else None
        with pytest.raises(UntrustedPath, match="kernel's"):
            write_file(name, b"{}", "--json")
        assert (os.readlink(name) if os.path.islink(name) else None) == before
    (tmp_path / "real.json").write_bytes(b"old")
    (tmp_path / "mine.json").symlink_to(tmp_path / "real.json")  # root's own link under the name: replaced too
    write_file(tmp_path / "mine.json", b"new", "--json")
    assert not (tmp_path / "mine.json").is_symlink() and (tmp_path / "real.json").read_bytes() == b"old"
    (tmp_path / "out.json").symlink_to("/dev/full")
    write_file(tmp_path / "out.json", b"{}", "--json")
    assert (tmp_path / "out.json").read_bytes() == b"{}"


def test_a_file_written_replaces_a_hard_link_planted_under_its_name(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    os.link(target, tmp_path / "out.json")
    write_file(tmp_path / "out.json", b"{}", "--json")
    assert target.read_bytes() == b"keep" and (tmp_path / "out.json").read_bytes() == b"{}"


def test_a_device_or_directory_is_not_a_file_to_write(tmp_path):
    with pytest.raises(UntrustedPath, match="kernel's dev tree"):
        write_file("/dev/full", b"x", "--json")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UntrustedPath, match="not a regular file"):
        write_file(fifo, b"x", "--json")
    with pytest.raises(UntrustedPath, match="a directory"):
        write_file(tmp_path, b"x", "--json")


def test_a_directory_of_the_users_is_refused_unless_empty_and_never_changed(tmp_path):
    full = tmp_path / "full"
    full.mkdir(mode=0o755)
    (full / "mine").write_text("x")
    with pytest.raises(UntrustedPath, match="did not make"):
        own_dir(full, "--site")
    with pytest.raises(UntrustedWorkdir, match="did not make"):
        prepare(str(full))
    assert snapshot(full) == (0o755, ["mine"])
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    prepare(str(empty))  # empty and root's: taken, and marked as pickfs's
    assert MARKER in os.listdir(empty) and (empty / "ledger").is_dir()
    prepare(str(empty))  # and taken again


@pytest.mark.parametrize("table", ['[target]\nworkdir = "/etc"', '[method]\ncrash_keep = "/etc"'])
def test_plan_check_refuses_a_system_directory_as_work_or_keep_directory(tmp_path, capsys, table):
    plan = tmp_path / "p.toml"
    plan.write_text(f'fs = ["ext4"]\n{table}\n')
    refused(["plan", "check", str(plan)], capsys, "/etc")


def test_a_read_only_command_creates_no_work_directory(tmp_path, capsys):
    wd = tmp_path / "wd"
    code, _, err = pickfs(["results", "--workdir", str(wd)], capsys)
    assert not wd.exists(), err
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o755)
    code, _, err = pickfs(["results", "--workdir", str(mine)], capsys)
    assert snapshot(mine) == (0o755, []), err


@as_root
def test_crashtest_keep_states_through_a_planted_link_is_refused_before_anything_runs(tmp_path, capsys):
    keep = tmp_path / "rootkeep"
    keep.mkdir(mode=0o755)
    (keep / "ext4-sqlite-tpcb-state-1.img").write_bytes(b"old")
    plant_link(tmp_path / "kl", keep)
    before = snapshot(keep)
    refused(["crashtest", "--fs", "ext4", "--set", "synchronous=OFF", "--states", "3", "--duration", "2s",
             "--size", "512M", "--keep-states", str(tmp_path / "kl"), "--workdir", str(tmp_path / "wd")], capsys,
            "symbolic link owned by uid 65534")
    assert snapshot(keep) == before and (keep / "ext4-sqlite-tpcb-state-1.img").read_bytes() == b"old"


@as_root
def test_a_site_or_workdir_below_a_planted_link_is_refused(tmp_path, capsys):
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    plant_link(tmp_path / "l", victim)
    results = tmp_path / "r.db"
    from pickfs.store import ResultStore
    from tests.records import fill, make_plan

    store = ResultStore(results)
    fill(store, make_plan())
    store.close()
    refused(["report", "--results", str(results), "--site", str(tmp_path / "l" / "sub")], capsys,
            "symbolic link owned by uid 65534")
    pickfs(["results", "--workdir", str(tmp_path / "l" / "sub")], capsys)
    refused(["run", "--dry-run", "--fs", "ext4", "--workdir", str(tmp_path / "l" / "sub")], capsys,
            "symbolic link owned by uid 65534")
    refused(["report", "--results", str(results), "--html", str(tmp_path / "l" / "r.html")], capsys,
            "symbolic link owned by uid 65534")
    assert snapshot(victim) == (0o755, [])


def test_the_fleet_play_marks_a_work_directory_it_made_so_pickfs_takes_it_there():
    from pickfs.fleet.playbooks import run_playbook
    from tests.unit.test_fleetfix import tasks

    ts = tasks(run_playbook())
    names = [t["name"] for t in ts]
    mark = ts[names.index("mark the work directory pickfs's")]
    assert mark["ansible.builtin.file"]["path"].endswith("/" + MARKER)
    assert mark["when"] == "not pf_workdir_stat.stat.exists"  # one that was there already is judged by pickfs
    assert names.index("make pickfs's directories") < names.index("mark the work directory pickfs's") < \
        names.index("ship pickfs")


@as_root
def test_a_directory_target_below_a_planted_link_is_refused(tmp_path, capsys):
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    plant_link(tmp_path / "l", victim)
    refused(["run", "--dry-run", "--target", "directory", "--dir", str(tmp_path / "l"), "--workdir",
             str(tmp_path / "wd")], capsys, "symbolic link owned by uid 65534")
    assert snapshot(victim) == (0o755, [])


def test_a_site_directory_an_earlier_pickfs_wrote_is_taken_one_with_other_files_is_not(tmp_path):
    from pickfs.cli.report import check_site_dir
    from pickfs.errors import PlanError

    old = tmp_path / "old-site"
    old.mkdir(mode=0o755)
    for name in ("index.html", "plotly.min.js", "run-20260101-000000-abcd.html"):
        (old / name).write_text("x")
    check_site_dir(old)
    (old / "notes.txt").write_text("mine")
    with pytest.raises(PlanError, match="did not make"):
        check_site_dir(old)


# -- a link under the name of an export: replaced by the file written, never followed, whoever owns it -------------
def _export_commands(tmp: Path, db: Path, out: Path) -> dict[str, list[str]]:
    run = ["report", RUN, "--results", str(db)]
    return {"--json": [*run, "--json", str(out)], "--csv": [*run, "--csv", str(out)],
            "--markdown": [*run, "--markdown", str(out)], "--table-csv": [*run, "--table-csv", str(out)],
            "--html": [*run, "--html", str(out)], "env --json": ["env", "--json", str(out), str(tmp)]}


LINKS = ["root's link to a file", "another user's link to a file", "root's link to a directory",
         "another user's link to a directory", "a dangling link"]


def _link(tmp: Path, name: str, how: str) -> tuple[Path, Path]:
    """A link named `name` in `tmp/out`, made as `how` says; returns it and what it points to."""
    (tmp / "out").mkdir(exist_ok=True)
    if "directory" in how:
        target = tmp / "victim-dir"
        target.mkdir(exist_ok=True)
    else:
        target = tmp / "victim"
        if "dangling" not in how:
            target.write_bytes(b"keep")
    link = tmp / "out" / name
    link.symlink_to(target)
    if "another user" in how and os.geteuid() == 0:
        os.lchown(link, NOBODY, NOBODY)
    return link, target


def _untouched(target: Path, how: str) -> bool:
    if "directory" in how:
        return os.listdir(target) == []
    if "dangling" in how:
        return not os.path.lexists(target)
    return target.read_bytes() == b"keep"


@as_root
@pytest.mark.parametrize("how", LINKS)
@pytest.mark.parametrize("export", ["--json", "--csv", "--markdown", "--table-csv", "--html", "env --json"])
def test_an_export_replaces_a_link_under_its_name_and_never_writes_through_it(tmp_path, capsys, export, how):
    db = results_db(tmp_path)
    link, target = _link(tmp_path, "report.out", how)
    code, out, err = pickfs(_export_commands(tmp_path, db, link)[export], capsys)
    assert code == 0, err
    assert _untouched(target, how)
    assert link.is_file() and not link.is_symlink() and link.stat().st_size > 0
    assert stat.S_IMODE(link.stat().st_mode) == 0o666 & ~UMASK  # a fresh file, as any file the user makes


UMASK = current_umask(Path("/proc/self/status").read_text())


@as_root
@pytest.mark.parametrize("export", ["--json", "--csv", "--markdown", "--table-csv", "--html", "env --json"])
def test_an_export_made_through_sudo_belongs_to_the_user_who_asked(tmp_path, capsys, monkeypatch, export):
    """`sudo pickfs report --html r.html` wrote a file only root could read (0600, root's)."""
    db = results_db(tmp_path)
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "report.out"
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    monkeypatch.setenv("SUDO_GID", str(NOBODY))
    code, _, err = pickfs(_export_commands(tmp_path, db, out)[export], capsys)
    assert code == 0, err
    st = out.stat()
    assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)
    assert stat.S_IMODE(st.st_mode) & 0o400
    if export == "--html":
        assert (tmp_path / "out" / "plotly.min.js").stat().st_uid == NOBODY


@as_root
def test_a_site_made_through_sudo_can_be_read_by_the_user_who_asked(tmp_path, capsys, monkeypatch):
    db = results_db(tmp_path)
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    monkeypatch.setenv("SUDO_GID", str(NOBODY))
    code, _, err = pickfs(["report", "--results", str(db), "--site", str(tmp_path / "site")], capsys)
    assert code == 0, err
    assert stat.S_IMODE((tmp_path / "site").stat().st_mode) & 0o005 == 0o005  # others may list and enter it
    assert (tmp_path / "site" / "index.html").stat().st_uid == NOBODY


def test_the_user_behind_sudo_is_read_only_for_root():
    assert invoking_user({"SUDO_UID": "1000", "SUDO_GID": "100"}, 0) == (1000, 100)
    assert invoking_user({"SUDO_UID": "1000", "SUDO_GID": "100"}, 1000) is None  # not root: its own files
    assert invoking_user({"SUDO_UID": "0", "SUDO_GID": "0"}, 0) is None
    assert invoking_user({"SUDO_UID": "x", "SUDO_GID": "100"}, 0) is None
    assert invoking_user({}, 0) is None
    assert current_umask("Name:\tx\nUmask:\t0027\n") == 0o027


@as_root
@pytest.mark.parametrize("how", LINKS)
@pytest.mark.parametrize("name", ["index.html", f"run-{RUN}.html", "plotly.min.js"])
def test_a_site_page_or_the_html_scripts_replace_a_link_under_their_name(tmp_path, capsys, how, name):
    db = results_db(tmp_path)
    site = tmp_path / "out"
    code, _, err = pickfs(["report", "--results", str(db), "--site", str(site)], capsys)
    assert code == 0, err
    (site / name).unlink()
    link, target = _link(tmp_path, name, how)
    code, _, err = pickfs(["report", "--results", str(db), "--site", str(site)], capsys)
    assert code == 0, err
    assert _untouched(target, how) and link.is_file() and not link.is_symlink()
    if name == "plotly.min.js":  # the page's script beside an --html page, the same way
        link.unlink()
        link, target = _link(tmp_path, name, how)
        code, _, err = pickfs(["report", RUN, "--results", str(db), "--html", str(site / "r.html")], capsys)
        assert code == 0, err
        assert _untouched(target, how) and link.is_file() and not link.is_symlink()


def results_db(tmp: Path) -> Path:
    from pickfs.store import ResultStore
    from tests.records import fill, make_plan

    store = ResultStore(tmp / "r.db")
    fill(store, make_plan(), RUN)
    store.close()
    return tmp / "r.db"
